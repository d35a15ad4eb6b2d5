import LLMSpoolCore
/// How the stub answers one request: the server's defaults, overridden by the request's
/// optional `"stub"` object. Its `faults` list says how attempt 1, 2, ... of the same
/// request misbehave; attempts past the list are answered normally.
public struct StubDirectives: Sendable, Equatable {
    public var status = 200
    public var tokens = 8
    public var latencyMs = 0
    public var tokenDelayMs = 0
    public var faults: [StubFault] = []
    /// For a stream: about this many bytes of content, in 16 KiB events (benchmarks).
    public var bulkBytes = 0
    /// For a plain answer: sent in 4 KiB pieces this many milliseconds apart, a body that
    /// arrives slowly (a plain answer is otherwise sent at once).
    public var plainPieceDelayMs = 0
    /// With a status other than 200: the error's message repeats the bearer token sent, as
    /// a provider rejecting a key does (the daemon must blank it out).
    public var echoKey = false

    public init(status: Int = 200, tokens: Int = 8, latencyMs: Int = 0, tokenDelayMs: Int = 0, faults: [StubFault] = []) {
        self.status = status
        self.tokens = tokens
        self.latencyMs = latencyMs
        self.tokenDelayMs = tokenDelayMs
        self.faults = faults
    }

    public func overridden(by request: [String: Any]) -> StubDirectives {
        guard let stub = request["stub"] as? [String: Any] else { return self }
        var result = self
        if let value = stub["status"] as? Int { result.status = value }
        if let value = stub["tokens"] as? Int { result.tokens = max(1, min(value, 10_000_000)) }
        if let value = stub["latency_ms"] as? Int { result.latencyMs = max(0, value) }
        if let value = stub["token_delay_ms"] as? Int { result.tokenDelayMs = max(0, value) }
        if let value = stub["bulk_bytes"] as? Int { result.bulkBytes = max(0, value) }
        if let value = stub["plain_piece_delay_ms"] as? Int { result.plainPieceDelayMs = max(0, min(value, 60_000)) }
        if let value = stub["echo_key"] as? Bool { result.echoKey = value }
        if let list = stub["faults"] as? [Any] {
            result.faults = list.map { StubFault(($0 as? [String: Any]) ?? [:]) }
        }
        return result
    }
}

/// One misbehaviour, for one attempt.
public struct StubFault: Sendable, Equatable {
    /// Answer with this status and an OpenAI-shaped error body.
    public var status: Int?
    /// Sent as `Retry-After` (seconds) and `retry-after-ms`.
    public var retryAfter: String?
    public var retryAfterMs: String?
    public var shouldRetry: String?
    /// Wait this long before the status line.
    public var headerDelayMs = 0
    /// Send this many pieces of the stream, then drop the connection.
    public var cutAfter: Int?
    /// Send this many pieces, then end cleanly without `[DONE]` or a finish reason.
    public var truncateAfter: Int?
    /// After the first piece, send only keep-alive comments for this long.
    public var stallMs = 0
    public var keepaliveMs = 200
    /// Send an error event after the first content piece.
    public var errorInStream = false
    /// Answer `status` (200 when not given) with no body at all.
    public var emptyBody = false
    /// A stream holding nothing but `data: [DONE]`.
    public var doneOnly = false
    /// After the stream's opening, one `data:` line of this many bytes that never ends,
    /// then the connection dropped.
    public var endlessLineBytes = 0
    /// Extra response headers, sent as given (`x-ratelimit-*`, odd `Retry-After` values).
    public var headers: [(String, String)] = []

    public init(status: Int? = nil) {
        self.status = status
    }

    init(_ object: [String: Any]) {
        status = object["status"] as? Int
        retryAfter = (object["retry_after"] as? String) ?? (object["retry_after"] as? Int).map(String.init)
        retryAfterMs = (object["retry_after_ms"] as? String) ?? (object["retry_after_ms"] as? Int).map(String.init)
        shouldRetry = object["x_should_retry"] as? String
        headerDelayMs = max(0, object["header_delay_ms"] as? Int ?? 0)
        cutAfter = object["cut_after"] as? Int
        truncateAfter = object["truncate_after"] as? Int
        stallMs = max(0, object["stall_ms"] as? Int ?? 0)
        keepaliveMs = max(1, object["keepalive_ms"] as? Int ?? 200)
        errorInStream = object["error_in_stream"] as? Bool ?? false
        emptyBody = object["empty_body"] as? Bool ?? false
        doneOnly = object["done_only"] as? Bool ?? false
        endlessLineBytes = max(0, object["endless_line_bytes"] as? Int ?? 0)
        headers = ((object["headers"] as? [String: Any]) ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, "\($0.value)") }
    }

    public static func == (left: StubFault, right: StubFault) -> Bool {
        left.status == right.status && left.retryAfter == right.retryAfter && left.retryAfterMs == right.retryAfterMs
            && left.shouldRetry == right.shouldRetry && left.headerDelayMs == right.headerDelayMs && left.cutAfter == right.cutAfter
            && left.truncateAfter == right.truncateAfter && left.stallMs == right.stallMs && left.keepaliveMs == right.keepaliveMs
            && left.errorInStream == right.errorInStream && left.emptyBody == right.emptyBody && left.doneOnly == right.doneOnly
            && left.endlessLineBytes == right.endlessLineBytes
            && left.headers.map { $0.0 + ":" + $0.1 } == right.headers.map { $0.0 + ":" + $0.1 }
    }
}
