import CCurl
import Foundation
import LLMSpoolCore
import LLMSpoolModel

/// What a reference client did: its wall time, and how many requests did not get a 200
/// answer (a client that does not retry finishes early when requests fail).
struct ClientRun {
    var seconds: Double
    var failed: Int
    /// The first libcurl call that failed, in libcurl's words; nil when none did.
    var error: String? = nil
}

/// The limit: a bare libcurl multi client with the daemon's concurrency, writing no files.
enum RawCurlClient {
    /// HTTPS settings: the CA to trust and whether to speak HTTP/2 (multiplexed, new
    /// streams waiting for the connection being set up, as the daemon does).
    struct TLS {
        var caFile: String
        var http2: Bool
    }

    /// Where libcurl placed each HTTP/2 stream, told by CURLOPT_PREREQFUNCTION, so that the
    /// reference client paces its starts as the daemon does (`ConnectionPacing`): without it
    /// libcurl 7.88 opens a connection per stream past the first connection's hundred.
    final class Placements {
        var placed: [(handle: UnsafeMutableRawPointer, port: Int)] = []
    }

    /// One handle's context for the callback: the handle, and where to report it.
    final class Slot {
        unowned let placements: Placements
        let handle: UnsafeMutableRawPointer
        init(_ placements: Placements, _ handle: UnsafeMutableRawPointer) {
            self.placements = placements
            self.handle = handle
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func check(_ code: CURLcode, _ call: String) throws {
        try CurlError.check(code, call)
    }

    static func check(_ code: CURLMcode, _ call: String) throws {
        try CurlError.check(code, call)
    }

    /// Sends every body to `url`, `concurrency` at a time, once each.
    static func run(url: String, bodies: [[UInt8]], concurrency: Int, tls: TLS? = nil) -> ClientRun {
        do {
            return try send(url: url, bodies: bodies, concurrency: concurrency, tls: tls)
        } catch {
            return ClientRun(seconds: .nan, failed: bodies.count, error: "\(error)")
        }
    }

    private static func send(url: String, bodies: [[UInt8]], concurrency: Int, tls: TLS?) throws -> ClientRun {
        try check(curl_global_init(Int(CURL_GLOBAL_DEFAULT)), "curl_global_init")
        guard let multi = curl_multi_init() else { throw Failure(description: "curl_multi_init returned nothing") }
        // A failed cleanup after the run leaves nothing to undo; it is reported, not thrown.
        defer {
            do { try check(curl_multi_cleanup(multi), "curl_multi_cleanup") } catch { FileHandle.standardError.write(Data("\(error)\n".utf8)) }
        }
        // Keep as many connections warm as run at once, as the daemon does.
        try check(llms_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, concurrency), "curl_multi_setopt(MAXCONNECTS)")
        if tls?.http2 == true {
            try check(llms_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)), "curl_multi_setopt(PIPELINING)")
            try check(llms_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 100), "curl_multi_setopt(MAX_CONCURRENT_STREAMS)")
        }
        var next = 0
        var running = 0
        var failed = 0
        var handles: [UnsafeMutableRawPointer: UnsafeMutablePointer<curl_slist>?] = [:]
        let discard: llms_curl_data_callback = { _, size, count, _ in size * count }
        var pacing = tls?.http2 == true ? ConnectionPacing(streamsPerConnection: 100) : nil
        let placements = Placements()
        var slots: [UnsafeMutableRawPointer: Slot] = [:]
        var portOf: [UnsafeMutableRawPointer: Int] = [:]
        let started = Date()
        func add() throws {
            guard next < bodies.count else { return }
            guard let handle = curl_easy_init() else { throw Failure(description: "curl_easy_init returned nothing") }
            let body = bodies[next].map { CChar(bitPattern: $0) }
            next += 1
            var list: UnsafeMutablePointer<curl_slist>? = curl_slist_append(nil, "Content-Type: application/json")
            list = curl_slist_append(list, "Expect:")
            guard list != nil else { throw Failure(description: "curl_slist_append: out of memory") }
            handles[handle] = list
            try check(url.withCString { llms_easy_setopt_string(handle, CURLOPT_URL, $0) }, "curl_easy_setopt(URL)")
            try check(llms_easy_setopt_long(handle, CURLOPT_POST, 1), "curl_easy_setopt(POST)")
            try check(llms_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "curl_easy_setopt(NOSIGNAL)")
            try check(llms_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "curl_easy_setopt(POSTFIELDSIZE_LARGE)")
            try check(llms_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list), "curl_easy_setopt(HTTPHEADER)")
            try check(llms_easy_setopt_callback(handle, CURLOPT_WRITEFUNCTION, discard), "curl_easy_setopt(WRITEFUNCTION)")
            if let tls {
                try check(tls.caFile.withCString { llms_easy_setopt_string(handle, CURLOPT_CAINFO, $0) }, "curl_easy_setopt(CAINFO)")
                let version = tls.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1
                try check(llms_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(version)), "curl_easy_setopt(HTTP_VERSION)")
                if tls.http2 {
                    try check(llms_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1), "curl_easy_setopt(PIPEWAIT)")
                    let slot = Slot(placements, handle)
                    slots[handle] = slot
                    try check(llms_easy_setopt_pointer(handle, CURLOPT_PREREQDATA, Unmanaged.passUnretained(slot).toOpaque()),
                              "curl_easy_setopt(PREREQDATA)")
                    try check(llms_easy_setopt_prereq(handle) { context, _, _, _, port in
                        let slot = Unmanaged<Slot>.fromOpaque(context!).takeUnretainedValue()
                        slot.placements.placed.append((slot.handle, Int(port)))
                        return CURL_PREREQFUNC_OK
                    }, "curl_easy_setopt(PREREQFUNCTION)")
                    pacing?.started(at: Date().timeIntervalSince1970)
                }
            }
            // COPYPOSTFIELDS copies the body, so the array need not outlive this call.
            try check(body.withUnsafeBufferPointer { llms_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)) },
                      "curl_easy_setopt(COPYPOSTFIELDS)")
            try check(curl_multi_add_handle(multi, handle), "curl_multi_add_handle")
            running += 1
        }
        func fill() throws {
            while running < concurrency, next < bodies.count, pacing?.mayStart(at: Date().timeIntervalSince1970) ?? true { try add() }
        }
        try fill()
        while running > 0 {
            var still: Int32 = 0
            try check(curl_multi_perform(multi, &still), "curl_multi_perform")
            for (handle, port) in placements.placed {
                if let old = portOf[handle] { pacing?.moved(from: old, to: port) } else { pacing?.placed(on: port) }
                portOf[handle] = port
            }
            placements.placed.removeAll(keepingCapacity: true)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
                var status = 0
                let answered = llms_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK
                if llms_curlmsg_result(message) != CURLE_OK || !answered || status != 200 { failed += 1 }
                try check(curl_multi_remove_handle(multi, handle), "curl_multi_remove_handle")
                curl_slist_free_all(handles[handle] ?? nil)
                handles[handle] = nil
                curl_easy_cleanup(handle)
                pacing?.ended(on: portOf.removeValue(forKey: handle))
                slots[handle] = nil
                running -= 1
            }
            try fill()
            try check(curl_multi_poll(multi, nil, 0, 100, nil), "curl_multi_poll")
        }
        return ClientRun(seconds: Date().timeIntervalSince(started), failed: failed)
    }
}
