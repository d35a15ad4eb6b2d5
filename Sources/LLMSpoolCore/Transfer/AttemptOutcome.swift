import Foundation

/// Everything one HTTP attempt produced, handed from the event loop to the finisher.
/// The `.partial` descriptor travels with it: the finisher fsyncs and closes it.
public struct AttemptOutcome: Sendable {
    /// How the attempt ended at the transport level.
    public enum Ending: Sendable, Equatable {
        /// The server sent a whole response (any status).
        case response(status: Int)
        /// libcurl gave up: connection refused, timeout, reset.
        case transportError(code: Int32, message: String)
        /// Writing the `.partial` failed.
        case diskError(SystemError)
        /// The request file left `outgoing` while it was in flight.
        case cancelled
    }

    public let task: TaskDescriptor
    public let ending: Ending
    public let partialFD: Int32
    /// Response headers with lower-case names (the final response's only).
    public let headers: [String: String]
    public let bytesSent: Int64
    public let bytesReceived: Int64
    public let startedAt: Date
    public let endedAt: Date
    public let endpoint: String
}
