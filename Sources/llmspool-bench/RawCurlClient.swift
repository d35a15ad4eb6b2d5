import CCurl
import Foundation
import LLMSpoolCore

/// What a reference client did: its wall time, and how many requests did not get a 200
/// answer (a client that does not retry finishes early when requests fail).
struct ClientRun {
    var seconds: Double
    var failed: Int
}

/// The limit: a bare libcurl multi client with the daemon's concurrency, writing no files.
///
/// Every CURLcode and CURLMcode is checked, as in the daemon: a transfer's own result
/// counts the request as failed; any other refusal throws its `CurlError`, since a figure
/// taken past a refused option or a broken multi handle would not be this client's.
enum RawCurlClient {
    /// Sends every body to `url`, `concurrency` at a time, once each.
    static func run(url: String, bodies: [[UInt8]], concurrency: Int) throws -> ClientRun {
        try CurlError.check(curl_global_init(Int(CURL_GLOBAL_DEFAULT)), "curl_global_init")
        guard let multi = curl_multi_init() else {
            throw CurlError(call: "curl_multi_init", code: Int32(CURLM_OUT_OF_MEMORY.rawValue), text: "out of memory")
        }
        var handles: [UnsafeMutableRawPointer: UnsafeMutablePointer<curl_slist>] = [:]
        defer {
            // Only after a failure are handles left; the error already thrown is the one to hear.
            for (handle, list) in handles { release(handle, list, from: multi) }
            warnUnless(curl_multi_cleanup(multi), "curl_multi_cleanup")
        }
        // Keep as many connections warm as run at once, as the daemon does.
        try CurlError.check(llms_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, concurrency), "curl_multi_setopt(MAXCONNECTS)")
        var next = 0
        var failed = 0
        let discard: llms_curl_data_callback = { _, size, count, _ in size * count }
        let started = Date()
        func add() throws {
            guard next < bodies.count else { return }
            guard let handle = curl_easy_init() else {
                throw CurlError(call: "curl_easy_init", code: Int32(CURLE_OUT_OF_MEMORY.rawValue), text: "out of memory")
            }
            guard let list = curl_slist_append(nil, "Content-Type: application/json") else {
                curl_easy_cleanup(handle)
                throw CurlError(call: "curl_slist_append", code: Int32(CURLE_OUT_OF_MEMORY.rawValue), text: "out of memory")
            }
            do {
                guard curl_slist_append(list, "Expect:") != nil else {
                    throw CurlError(call: "curl_slist_append", code: Int32(CURLE_OUT_OF_MEMORY.rawValue), text: "out of memory")
                }
                let body = bodies[next].map { CChar(bitPattern: $0) }
                try CurlError.check(url.withCString { llms_easy_setopt_string(handle, CURLOPT_URL, $0) }, "curl_easy_setopt(URL)")
                try CurlError.check(llms_easy_setopt_long(handle, CURLOPT_POST, 1), "curl_easy_setopt(POST)")
                try CurlError.check(llms_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "curl_easy_setopt(NOSIGNAL)")
                try CurlError.check(llms_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)),
                                    "curl_easy_setopt(POSTFIELDSIZE_LARGE)")
                try CurlError.check(llms_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list), "curl_easy_setopt(HTTPHEADER)")
                try CurlError.check(llms_easy_setopt_callback(handle, CURLOPT_WRITEFUNCTION, discard), "curl_easy_setopt(WRITEFUNCTION)")
                // COPYPOSTFIELDS copies the body, so the array need not outlive this call.
                try CurlError.check(body.withUnsafeBufferPointer {
                    llms_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress))
                }, "curl_easy_setopt(COPYPOSTFIELDS)")
                try CurlError.check(curl_multi_add_handle(multi, handle), "curl_multi_add_handle")
            } catch {
                curl_easy_cleanup(handle)
                curl_slist_free_all(list)
                throw error
            }
            handles[handle] = list
            next += 1
        }
        for _ in 0..<concurrency { try add() }
        while !handles.isEmpty {
            var still: Int32 = 0
            try CurlError.check(curl_multi_perform(multi, &still), "curl_multi_perform")
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                      let list = handles.removeValue(forKey: handle) else { continue }
                var status = 0
                let result = llms_curlmsg_result(message)
                if result == CURLE_OK {
                    try CurlError.check(llms_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status), "curl_easy_getinfo(RESPONSE_CODE)")
                }
                if result != CURLE_OK || status != 200 { failed += 1 }
                try CurlError.check(curl_multi_remove_handle(multi, handle), "curl_multi_remove_handle")
                curl_easy_cleanup(handle)
                curl_slist_free_all(list)
                try add()
            }
            try CurlError.check(curl_multi_poll(multi, nil, 0, 100, nil), "curl_multi_poll")
        }
        return ClientRun(seconds: Date().timeIntervalSince(started), failed: failed)
    }

    private static func release(_ handle: UnsafeMutableRawPointer, _ list: UnsafeMutablePointer<curl_slist>, from multi: UnsafeMutableRawPointer) {
        warnUnless(curl_multi_remove_handle(multi, handle), "curl_multi_remove_handle")
        curl_easy_cleanup(handle)
        curl_slist_free_all(list)
    }

    /// For the clean-up, which has no caller left to throw to.
    private static func warnUnless(_ code: CURLMcode, _ call: String) {
        do {
            try CurlError.check(code, call)
        } catch {
            FileHandle.standardError.write(Data("llmspool-bench: \(error)\n".utf8))
        }
    }
}
