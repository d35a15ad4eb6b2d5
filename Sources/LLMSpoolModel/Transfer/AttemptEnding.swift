/// How the attempt ended at the transport level.
public enum AttemptEnding: Sendable, Equatable {
    /// The server sent a whole response (any status).
    case response(status: Int)
    /// libcurl gave up: connection refused, reset, a TLS failure.
    case transportError(code: Int32, message: String)
    /// A timer ended the attempt.
    case timedOut(AttemptFailure.Timer, message: String)
    /// Writing the `.partial` failed.
    case diskError(String)
    /// The answer grew past `max_response_bytes`.
    case responseTooLarge(limit: Int64)
    /// One event of a stream passed `limit` bytes without ending: held whole until its end,
    /// it would cost memory in proportion (a hostile server's 200 MB line, about 2.4 times that).
    case eventTooLarge(limit: Int)
    /// A response header line passed libcurl's limit (100 KiB in 7.88).
    case headerTooLarge(String)
    /// Another daemon took the request over: this attempt must leave no trace.
    case leaseLost
    /// The request file left `outgoing` while it was in flight.
    case cancelled
    /// The daemon died while this request was in flight, `starts` times in a row.
    case crashLoop(starts: Int)
    /// The request waited in a remote batch whose window passed before it ran.
    case expired(String)
}

extension AttemptEnding {
    /// A word for the metrics' `result` label: the status class of a response (`2xx`,
    /// `4xx`, `5xx`), or what ended the attempt. Few values, whatever the server sends.
    public var metricsLabel: String {
        switch self {
        case .response(let status): (100...599).contains(status) ? "\(status / 100)xx" : "other-status"
        case .transportError: "transport-error"
        case .timedOut: "timeout"
        case .diskError: "disk-error"
        case .responseTooLarge: "too-large"
        case .eventTooLarge: "event-too-large"
        case .headerTooLarge: "header-too-large"
        case .leaseLost: "lease-lost"
        case .cancelled: "cancelled"
        case .crashLoop: "crash-loop"
        case .expired: "expired"
        }
    }

    /// libcurl's CURLE_OUT_OF_MEMORY: 7.88 also answers it for a header line past its
    /// 100 KiB limit, which is the endpoint's fault, not the machine's.
    static let curlOutOfMemory: Int32 = 27

    /// What a failed libcurl transfer amounts to. A code 27 after the status line arrived
    /// is a giant header (a real shortage of memory before any byte is told apart).
    public static func transport(code: Int32, message: String, responseStarted: Bool) -> AttemptEnding {
        if code == curlOutOfMemory && responseStarted { return .headerTooLarge(message) }
        return .transportError(code: code, message: message)
    }
}
