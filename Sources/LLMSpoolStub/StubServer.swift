import LLMSpoolCore
import CMicroHTTPD
import Foundation
import Glibc
import Synchronization

/// The bundled OpenAI-compatible endpoint, on 127.0.0.1 over libmicrohttpd. It serves the
/// tests, the benchmarks and the demo; `StubResponder` decides every answer. It counts the
/// attempts of each distinct request body (for fault injection) and keeps a log of what
/// arrived when, served at `GET /stub/requests`.
public final class StubServer: @unchecked Sendable {
    // @unchecked Sendable holds because `daemon` is written once in init and only read
    // after (stop() runs once, from the owner); `attempts` and `log` are Mutexes, `timer`
    // is Sendable and `stopping` atomic.

    /// One request as the stub saw it.
    public struct Arrival: Sendable {
        public let key: String
        public let attempt: Int
        public let at: Double
        public let prompt: String
        /// The path it was posted to, which names its dialect.
        public let path: String
    }

    static let logLimit = 200_000
    /// The request headers a dialect's answer may depend on (looked up case-insensitively).
    static let checkedHeaders = ["authorization", "x-api-key", "anthropic-version", "host"]

    private let responder: StubResponder
    private let batches: StubBatches
    private let messageBatches: StubMessageBatches
    private let attempts = Mutex<[String: Int]>([:])
    private let log = Mutex<[Arrival]>([])
    private var daemon: OpaquePointer?
    private let timer = ResumeTimer()
    /// Set by `stop`: connections then end at once instead of waiting again.
    let stopping = Atomic<Bool>(false)
    public private(set) var port: UInt16 = 0

    public init(port: UInt16 = 0, defaults: StubDirectives = StubDirectives(), batchOptions: StubBatchOptions = StubBatchOptions()) throws {
        responder = StubResponder(defaults: defaults)
        batches = StubBatches(options: batchOptions, responder: responder)
        messageBatches = StubMessageBatches(options: batchOptions, responder: responder)
        let context = Unmanaged.passUnretained(self).toOpaque()
        // Polling threads on epoll serve every connection: a connection that must wait is
        // suspended and resumed by `timer`, so ten thousand slow streams cost no threads.
        let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue
        // One polling thread per core: the stub's ceiling must stay above the daemon's.
        let threads = UInt32(max(2, ProcessInfo.processInfo.activeProcessorCount))
        daemon = llms_mhd_start_ipv4(UInt32(flags), nil, port, StubServer.accessHandler, context,
                                         StubServer.completedHandler, nil, 20_000, 300, threads)
        guard let daemon else {
            throw ConfigError("the local endpoint could not listen on 127.0.0.1:\(port) (is the port in use?)")
        }
        self.port = llms_mhd_bound_port(daemon)
    }

    deinit { stop() }

    public var baseURL: String { "http://127.0.0.1:\(port)/v1" }

    public func stop() {
        if let daemon {
            stopping.store(true, ordering: .sequentiallyConsistent)
            timer.stop()
            MHD_stop_daemon(daemon)
            self.daemon = nil
        }
    }

    /// Suspends `connection` for `milliseconds`; called from libmicrohttpd's thread.
    func wait(_ connection: OpaquePointer, milliseconds: Int) {
        MHD_suspend_connection(connection)
        timer.resume(connection, after: milliseconds)
    }

    public var arrivals: [Arrival] { log.withLock { $0 } }

    /// Counts the attempt and logs the arrival; returns the attempt number.
    func record(_ body: [UInt8], path: String, at arrived: Double) -> Int {
        let key = StubResponder.fingerprint(body)
        let attempt = attempts.withLock { counts -> Int in
            counts[key, default: 0] += 1
            return counts[key]!
        }
        let prompt = JSONObject.parse(body).map(StubAnswer.prompt(of:)) ?? ""
        let arrival = Arrival(key: key, attempt: attempt, at: arrived, prompt: prompt, path: path)
        log.withLock { entries in
            if entries.count >= StubServer.logLimit { entries.removeFirst(entries.count / 2) }
            entries.append(arrival)
        }
        return attempt
    }

    func respond(method: String, path: String, query: [String: String] = [:], body: [UInt8], headers: [String: String] = [:], arrived: Double) -> StubResponder.Response {
        if method == "GET" && path == "/stub/batches" {
            // Both batch APIs' creations per group id, so a test proves no group was created
            // twice, and their output downloads, so it proves a cut one was fetched again.
            let counts = batches.counts.merged(with: messageBatches.counts)
            return StubResponder.Response(status: 200, headers: [("Content-Type", "application/json")], latencyMs: 0,
                                          pieces: [.init(bytes: StubResponder.json(["creations": counts.creations, "batches": counts.creations.values.reduce(0, +),
                                                                                    "cancelled": counts.cancelled, "downloads": counts.downloads,
                                                                                    "trickled": counts.trickled]), delayMs: 0)])
        }
        if let answer = messageBatches.respond(method: method, path: path, query: query, body: body, headers: headers) { return answer }
        if let answer = batches.respond(method: method, path: path, query: query, body: body, headers: headers) { return answer }
        if method == "GET" && path == "/stub/requests" {
            let entries = arrivals.map { ["key": $0.key, "attempt": $0.attempt, "at": $0.at, "prompt": $0.prompt, "path": $0.path] as [String: Any] }
            return StubResponder.Response(status: 200, headers: [("Content-Type", "application/json")], latencyMs: 0,
                                          pieces: [.init(bytes: StubResponder.json(["requests": entries]), delayMs: 0)])
        }
        let attempt = method == "POST" ? record(body, path: path, at: arrived) : 1
        return responder.respond(method: method, path: path, body: body, attempt: attempt, headers: headers)
    }

    /// The request body as it arrives, and the answer once decided; one per connection.
    final class Exchange {
        var body: [UInt8] = []
        /// When the request's head was read: its arrival, as the log reports it.
        let arrived = Date().timeIntervalSince1970
        var answer: StubResponder.Response?
        var waited = false
    }

    /// Feeds one response's pieces to libmicrohttpd; before a piece that must wait, the
    /// connection is suspended and 0 returned, and the piece is sent once it is resumed.
    final class PieceReader {
        let pieces: [StubResponder.Piece]
        let abortAtEnd: Bool
        unowned let server: StubServer
        let connection: OpaquePointer
        var index = 0
        var offset = 0
        var repeated = 0
        var waited = false

        init(_ response: StubResponder.Response, server: StubServer, connection: OpaquePointer) {
            pieces = response.pieces
            abortAtEnd = response.abortAtEnd
            self.server = server
            self.connection = connection
        }

        func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
            guard index < pieces.count else {
                return abortAtEnd ? llms_mhd_content_end_with_error : llms_mhd_content_end_of_stream
            }
            let piece = pieces[index]
            if offset == 0 && repeated == 0 && piece.delayMs > 0 && !waited {
                if server.stopping.load(ordering: .relaxed) { return llms_mhd_content_end_with_error }
                waited = true
                server.wait(connection, milliseconds: piece.delayMs)
                return 0
            }
            waited = false
            let count = min(max, piece.bytes.count - offset)
            piece.bytes.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
            }
            offset += count
            if offset == piece.bytes.count {
                offset = 0
                repeated += 1
                if repeated >= piece.repeats {
                    index += 1
                    repeated = 0
                }
            }
            return count
        }
    }

    private static let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, connectionContext in
        guard let cls, let connection, let connectionContext, let uploadSize else { return llms_mhd_no }
        if connectionContext.pointee == nil {
            connectionContext.pointee = Unmanaged.passRetained(Exchange()).toOpaque()
            return llms_mhd_yes
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(connectionContext.pointee!).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if let uploadData {
                exchange.body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee))
            }
            uploadSize.pointee = 0
            return llms_mhd_yes
        }
        let server = Unmanaged<StubServer>.fromOpaque(cls).takeUnretainedValue()
        var headers: [String: String] = [:]
        var query: [String: String] = [:]
        if exchange.answer == nil {
            for name in StubServer.checkedHeaders {
                if let value = MHD_lookup_connection_value(connection, llms_mhd_header_kind, name) { headers[name] = String(cString: value) }
            }
            for name in ["limit", "after", "after_id", "before_id"] {
                if let value = MHD_lookup_connection_value(connection, llms_mhd_get_argument_kind, name) { query[name] = String(cString: value) }
            }
        }
        let answer = exchange.answer ?? server.respond(method: method.map { String(cString: $0) } ?? "",
                                                       path: url.map { String(cString: $0) } ?? "", query: query,
                                                       body: exchange.body, headers: headers, arrived: exchange.arrived)
        exchange.answer = answer
        if answer.latencyMs > 0 && !exchange.waited && !server.stopping.load(ordering: .relaxed) {
            // Called again once resumed, with the answer already decided.
            exchange.waited = true
            server.wait(connection, milliseconds: answer.latencyMs)
            return llms_mhd_yes
        }
        let reader = PieceReader(answer, server: server, connection: connection)
        let response = MHD_create_response_from_callback(
            llms_mhd_size_unknown, 256 * 1024,
            { context, _, buffer, max in
                Unmanaged<PieceReader>.fromOpaque(context!).takeUnretainedValue().read(into: buffer!, max: max)
            },
            Unmanaged.passRetained(reader).toOpaque(),
            { context in Unmanaged<PieceReader>.fromOpaque(context!).release() })
        guard let response else { return llms_mhd_no }
        for (name, value) in answer.headers {
            _ = MHD_add_response_header(response, name, value)
        }
        let queued = MHD_queue_response(connection, UInt32(answer.status), response)
        MHD_destroy_response(response)
        return queued
    }

    private static let completedHandler: MHD_RequestCompletedCallback = { _, _, connectionContext, _ in
        guard let connectionContext, let exchange = connectionContext.pointee else { return }
        Unmanaged<Exchange>.fromOpaque(exchange).release()
        connectionContext.pointee = nil
    }
}
