import CCurl
import Foundation

/// What a reference client did: its wall time, and how many requests did not get a 200
/// answer (a client that does not retry finishes early when requests fail).
struct ClientRun {
    var seconds: Double
    var failed: Int
}

/// The limit: a bare libcurl multi client with the daemon's concurrency, writing no files.
enum RawCurlClient {
    /// Sends every body to `url`, `concurrency` at a time, once each.
    static func run(url: String, bodies: [[UInt8]], concurrency: Int) -> ClientRun {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard let multi = curl_multi_init() else { return ClientRun(seconds: .nan, failed: bodies.count) }
        defer { curl_multi_cleanup(multi) }
        // Keep as many connections warm as run at once, as the daemon does.
        _ = llms_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, concurrency)
        var next = 0
        var running = 0
        var failed = 0
        var handles: [UnsafeMutableRawPointer: (UnsafeMutablePointer<curl_slist>?, [CChar])] = [:]
        let discard: llms_curl_data_callback = { _, size, count, _ in size * count }
        let started = Date()
        func add() {
            guard next < bodies.count, let handle = curl_easy_init() else { return }
            let body = bodies[next].map { CChar(bitPattern: $0) }
            next += 1
            var list: UnsafeMutablePointer<curl_slist>? = curl_slist_append(nil, "Content-Type: application/json")
            list = curl_slist_append(list, "Expect:")
            _ = url.withCString { llms_easy_setopt_string(handle, CURLOPT_URL, $0) }
            _ = llms_easy_setopt_long(handle, CURLOPT_POST, 1)
            _ = llms_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            _ = llms_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            _ = llms_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
            _ = llms_easy_setopt_callback(handle, CURLOPT_WRITEFUNCTION, discard)
            handles[handle] = (list, body)
            // COPYPOSTFIELDS copies the body, so the array need not outlive this call.
            _ = body.withUnsafeBufferPointer { llms_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
            curl_multi_add_handle(multi, handle)
            running += 1
        }
        for _ in 0..<concurrency { add() }
        while running > 0 {
            var still: Int32 = 0
            curl_multi_perform(multi, &still)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
                var status = 0
                _ = llms_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
                if llms_curlmsg_result(message) != CURLE_OK || status != 200 { failed += 1 }
                curl_multi_remove_handle(multi, handle)
                curl_slist_free_all(handles[handle]?.0)
                handles[handle] = nil
                curl_easy_cleanup(handle)
                running -= 1
                add()
            }
            curl_multi_poll(multi, nil, 0, 100, nil)
        }
        return ClientRun(seconds: Date().timeIntervalSince(started), failed: failed)
    }
}
