import CCurl

/// Typed setters over the shim's wrappers for libcurl's variadic calls; each checks its
/// CURLcode, since an option libcurl refuses (an old build, a bad value) would otherwise
/// send a request other than the one meant.
enum CurlHandle {
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) throws {
        try CurlError.check(llms_easy_setopt_long(handle, option, value), "curl_easy_setopt(option \(option.rawValue))")
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, offset value: Int64) throws {
        try CurlError.check(llms_easy_setopt_off(handle, option, curl_off_t(value)), "curl_easy_setopt(option \(option.rawValue))")
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, string value: String) throws {
        // CURLOPT strings are copied by libcurl (since 7.17), so a temporary C string is enough.
        try CurlError.check(value.withCString { llms_easy_setopt_string(handle, option, $0) }, "curl_easy_setopt(option \(option.rawValue))")
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws {
        try CurlError.check(llms_easy_setopt_pointer(handle, option, value), "curl_easy_setopt(option \(option.rawValue))")
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, callback: llms_curl_data_callback) throws {
        try CurlError.check(llms_easy_setopt_callback(handle, option, callback), "curl_easy_setopt(option \(option.rawValue))")
    }

    /// `CURLOPT_PREREQFUNCTION`: called once the transfer has a connection, before its request goes.
    static func setPrerequest(_ handle: UnsafeMutableRawPointer, _ callback: curl_prereq_callback) throws {
        try CurlError.check(llms_easy_setopt_prereq(handle, callback), "curl_easy_setopt(PREREQFUNCTION)")
    }

    /// `CURLOPT_XFERINFOFUNCTION`: called about once a second, and as bytes move; a nonzero
    /// return aborts the transfer (`CURLE_ABORTED_BY_CALLBACK`).
    static func setProgress(_ handle: UnsafeMutableRawPointer, _ callback: curl_xferinfo_callback) throws {
        try CurlError.check(llms_easy_setopt_xferinfo(handle, callback), "curl_easy_setopt(XFERINFOFUNCTION)")
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, list: UnsafeMutablePointer<curl_slist>?) throws {
        try CurlError.check(llms_easy_setopt_slist(handle, option, list), "curl_easy_setopt(option \(option.rawValue))")
    }

    /// `CURLOPT_COPYPOSTFIELDS`: libcurl copies `bytes` (as many as `CURLOPT_POSTFIELDSIZE_LARGE`
    /// says, which must be set first) and frees its copy with the handle.
    static func copyPostFields(_ handle: UnsafeMutableRawPointer, _ bytes: [UInt8]) throws {
        var bytes = bytes
        if bytes.isEmpty { bytes = [0] }  // a valid pointer for a zero-length body
        try bytes.withUnsafeMutableBytes { buffer in
            try CurlError.check(llms_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, buffer.baseAddress), "curl_easy_setopt(COPYPOSTFIELDS)")
        }
    }

    /// Body bytes libcurl sent (`CURLINFO_SIZE_UPLOAD_T`), within `0...limit`; 0 when it has no count.
    static func bytesUploaded(_ handle: UnsafeMutableRawPointer, atMost limit: Int64) -> Int64 {
        var count: curl_off_t = 0
        guard llms_easy_getinfo_off(handle, CURLINFO_SIZE_UPLOAD_T, &count) == CURLE_OK else { return 0 }
        return min(max(0, Int64(count)), limit)
    }

    /// The response's status; 0 when libcurl has none (no response yet, or the call failed).
    static func responseCode(_ handle: UnsafeMutableRawPointer) -> Int {
        var code = 0
        guard llms_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK else { return 0 }
        return code
    }
}
