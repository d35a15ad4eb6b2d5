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
    /// Another daemon took the request over: this attempt must leave no trace.
    case leaseLost
    /// The request file left `outgoing` while it was in flight.
    case cancelled
}

