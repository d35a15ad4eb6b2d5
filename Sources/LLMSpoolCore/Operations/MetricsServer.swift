import CMicroHTTPD
import Foundation

/// `/metrics` (Prometheus text format) and `/healthz` over libmicrohttpd, on the address
/// `--metrics` names. One internal thread serves it; scrapes are small and rare.
public final class MetricsServer: @unchecked Sendable {
    // @unchecked Sendable holds because `daemon` is written in init and by stop() only;
    // `metrics` is Sendable and libmicrohttpd serialises the callbacks on its thread.

    private let metrics: Metrics
    private var daemon: OpaquePointer?
    public private(set) var port: UInt16 = 0

    /// `address` is "HOST:PORT": an IPv4 address, `localhost`, or an IPv6 address in
    /// brackets, e.g. "127.0.0.1:9464", "localhost:9464", "[::1]:9464".
    public init(address: String, metrics: Metrics) throws {
        self.metrics = metrics
        let (host, ipv6, port) = try MetricsServer.parse(address)
        let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue | MHD_USE_ERROR_LOG.rawValue
        daemon = llms_mhd_start_exclusive(UInt32(flags), host, ipv6 ? 1 : 0, port, MetricsServer.handler,
                                          Unmanaged.passUnretained(self).toOpaque(), 64, 10)
        guard let daemon else {
            throw ConfigError("the metrics server cannot listen on \(address): the port is in use (by another llmspool or any other program) or the address is not this machine's; choose another with --metrics or \"metrics\"")
        }
        self.port = llms_mhd_bound_port(daemon)
    }

    /// HOST:PORT into the literal address to bind, its family and the port.
    public static func parse(_ address: String) throws -> (host: String, ipv6: Bool, port: UInt16) {
        let usage = "metrics takes HOST:PORT (a port from 0 to 65535), such as 127.0.0.1:9464, localhost:9464 or [::1]:9464, not \"\(TextEscaping.escape(address))\""
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw ConfigError(usage)
        }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard llms_ipv6_parses(host) != 0 else { throw ConfigError("metrics: \"\(host)\" is not an IPv6 address") }
            return (host, true, port)
        }
        if host == "localhost" { host = "127.0.0.1" }
        guard llms_ipv4_parses(host) != 0 else { throw ConfigError(usage) }
        return (host, false, port)
    }

    deinit { stop() }

    public func stop() {
        if let daemon {
            MHD_stop_daemon(daemon)
            self.daemon = nil
        }
    }

    func respond(method: String, path: String) -> (Int, String, String) {
        guard method == "GET" else { return (405, "text/plain", "use GET\n") }
        switch path {
        case "/metrics":
            let build = "# HELP llmspool_build_info The running version.\n# TYPE llmspool_build_info gauge\nllmspool_build_info{version=\"\(BuildInfo.version)\"} 1\n"
            return (200, "text/plain; version=0.0.4", metrics.render() + build)
        case "/healthz": return metrics.healthy() ? (200, "text/plain", "ok\n") : (503, "text/plain", "a loop has stopped\n")
        default: return (404, "text/plain", "not found: try /metrics or /healthz\n")
        }
    }

    private static let handler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, _, uploadSize, _ in
        guard let cls, let connection else { return llms_mhd_no }
        if let uploadSize, uploadSize.pointee > 0 {
            uploadSize.pointee = 0
            return llms_mhd_yes
        }
        let server = Unmanaged<MetricsServer>.fromOpaque(cls).takeUnretainedValue()
        let (status, type, body) = server.respond(method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "")
        var bytes = Array(body.utf8)
        let response = bytes.withUnsafeMutableBytes {
            MHD_create_response_from_buffer($0.count, $0.baseAddress, llms_mhd_must_copy)
        }
        guard let response else { return llms_mhd_no }
        _ = MHD_add_response_header(response, "Content-Type", type)
        let queued = MHD_queue_response(connection, UInt32(status), response)
        MHD_destroy_response(response)
        return queued
    }
}
