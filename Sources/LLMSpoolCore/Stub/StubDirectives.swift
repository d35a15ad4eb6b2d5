/// How the stub answers one request: the server's defaults, overridden by the request's
/// optional `"stub"` object (used by tests to inject faults).
public struct StubDirectives: Sendable, Equatable {
    public var status = 200
    public var tokens = 8
    public var latencyMs = 0
    public var tokenDelayMs = 0

    public init(status: Int = 200, tokens: Int = 8, latencyMs: Int = 0, tokenDelayMs: Int = 0) {
        self.status = status
        self.tokens = tokens
        self.latencyMs = latencyMs
        self.tokenDelayMs = tokenDelayMs
    }

    public func overridden(by request: [String: Any]) -> StubDirectives {
        guard let stub = request["stub"] as? [String: Any] else { return self }
        var result = self
        if let value = stub["status"] as? Int { result.status = value }
        if let value = stub["tokens"] as? Int { result.tokens = max(1, min(value, 10_000_000)) }
        if let value = stub["latency_ms"] as? Int { result.latencyMs = max(0, value) }
        if let value = stub["token_delay_ms"] as? Int { result.tokenDelayMs = max(0, value) }
        return result
    }
}
