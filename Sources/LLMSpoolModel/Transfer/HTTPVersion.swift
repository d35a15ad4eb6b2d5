/// Which HTTP an endpoint is spoken to with: the `http_version` setting and what it means
/// for an https or a plain http base URL.
public enum HTTPVersion: String, Sendable, Equatable, CaseIterable {
    /// HTTP/2 when the TLS server offers it by ALPN, else HTTP/1.1; plain http is HTTP/1.1.
    case auto
    case http1_1 = "1.1"
    /// HTTP/2 always: by ALPN over TLS, with prior knowledge (h2c) over plain http.
    case http2 = "2"

    /// What libcurl is asked for, named without libcurl's constants.
    public enum Wire: Sendable, Equatable {
        case http1_1
        /// HTTP/2 over TLS when ALPN agrees, HTTP/1.1 otherwise.
        case http2OverTLS
        /// HTTP/2 from the first byte, without an upgrade (cleartext h2c).
        case http2PriorKnowledge
    }

    /// The setting's value from a config file, or nil when it names no version.
    public init?(setting: String) {
        self.init(rawValue: setting)
    }

    public static var settingValues: String { allCases.map(\.rawValue).joined(separator: ", ") }

    public func wire(https: Bool) -> Wire {
        switch self {
        case .http1_1: return .http1_1
        // libcurl's own default since 7.62; said explicitly so that it does not depend on the build.
        case .auto: return https ? .http2OverTLS : .http1_1
        case .http2: return https ? .http2OverTLS : .http2PriorKnowledge
        }
    }

    /// Whether a new transfer should wait for a connection being set up to the same host
    /// rather than open its own: only where that connection may carry many streams. A
    /// burst of 5,000 starts otherwise opens 5,000 TLS connections before the first ALPN
    /// answer says one would have done.
    public func waitsForMultiplexing(https: Bool) -> Bool {
        wire(https: https) == .http2OverTLS
    }

    /// Whether each transfer takes a connection of its own, used once: h2c, where libcurl
    /// 7.88 fails every request after the first on a connection (HTTP/2 framing layer, curl
    /// code 16), whether they run together or one after another.
    public func connectionPerTransfer(https: Bool) -> Bool {
        wire(https: https) == .http2PriorKnowledge
    }
}
