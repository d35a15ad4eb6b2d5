import CCurl

/// Typed setters over the shim's wrappers for libcurl's variadic calls.
enum CurlHandle {
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) {
        _ = llms_easy_setopt_long(handle, option, value)
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, offset value: Int64) {
        _ = llms_easy_setopt_off(handle, option, curl_off_t(value))
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, string value: String) {
        // CURLOPT strings are copied by libcurl (since 7.17), so a temporary C string is enough.
        _ = value.withCString { llms_easy_setopt_string(handle, option, $0) }
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, pointer value: UnsafeMutableRawPointer?) {
        _ = llms_easy_setopt_pointer(handle, option, value)
    }

    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, callback: llms_curl_data_callback) {
        _ = llms_easy_setopt_callback(handle, option, callback)
    }

    static func responseCode(_ handle: UnsafeMutableRawPointer) -> Int {
        var code = 0
        _ = llms_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }
}
