import CMicroHTTPD
import Foundation
import Glibc

/// The bundled OpenAI-compatible endpoint, on 127.0.0.1 over libmicrohttpd. It serves the
/// tests, the benchmarks and the demo; `StubResponder` decides every answer.
public final class StubServer: @unchecked Sendable {
    // @unchecked Sendable holds because `daemon` is written once in init and only read
    // after; libmicrohttpd serialises its own callbacks per connection.

    private let responder: StubResponder
    private var daemon: OpaquePointer?
    public private(set) var port: UInt16 = 0

    public init(port: UInt16 = 0, defaults: StubDirectives = StubDirectives()) throws {
        responder = StubResponder(defaults: defaults)
        let context = Unmanaged.passUnretained(self).toOpaque()
        // A thread per connection lets a slow stream sleep between pieces without
        // holding up the others.
        let flags = MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue
            | MHD_USE_POLL.rawValue | MHD_USE_ERROR_LOG.rawValue
        daemon = llms_mhd_start_loopback(UInt32(flags), port, StubServer.accessHandler, context,
                                         StubServer.completedHandler, nil, 20_000, 300)
        guard let daemon else {
            throw ConfigError("the local endpoint could not listen on 127.0.0.1:\(port) (is the port in use?)")
        }
        self.port = llms_mhd_bound_port(daemon)
    }

    deinit { stop() }

    public var baseURL: String { "http://127.0.0.1:\(port)/v1" }

    public func stop() {
        if let daemon {
            MHD_stop_daemon(daemon)
            self.daemon = nil
        }
    }

    /// The request body as it arrives, one per connection.
    final class Exchange {
        var body: [UInt8] = []
    }

    /// Feeds one response's pieces to libmicrohttpd, sleeping between them.
    final class PieceReader {
        let pieces: [[UInt8]]
        let delayMs: Int
        var index = 0
        var offset = 0

        init(pieces: [[UInt8]], delayMs: Int) {
            self.pieces = pieces
            self.delayMs = delayMs
        }

        func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
            guard index < pieces.count else { return llms_mhd_content_end_of_stream }
            if offset == 0 && index > 0 && delayMs > 0 { usleep(UInt32(delayMs) * 1000) }
            let piece = pieces[index]
            let count = min(max, piece.count - offset)
            piece.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
            }
            offset += count
            if offset == piece.count {
                index += 1
                offset = 0
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
        let answer = server.responder.respond(method: method.map { String(cString: $0) } ?? "",
                                              path: url.map { String(cString: $0) } ?? "",
                                              body: exchange.body)
        if answer.latencyMs > 0 { usleep(UInt32(answer.latencyMs) * 1000) }
        let reader = PieceReader(pieces: answer.pieces, delayMs: answer.pieceDelayMs)
        let response = MHD_create_response_from_callback(
            llms_mhd_size_unknown, 16 * 1024,
            { context, _, buffer, max in
                Unmanaged<PieceReader>.fromOpaque(context!).takeUnretainedValue().read(into: buffer!, max: max)
            },
            Unmanaged.passRetained(reader).toOpaque(),
            { context in Unmanaged<PieceReader>.fromOpaque(context!).release() })
        guard let response else { return llms_mhd_no }
        _ = MHD_add_response_header(response, "Content-Type", answer.contentType)
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
