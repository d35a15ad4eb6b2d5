import Foundation

/// What the event loop made of a streamed answer while it arrived.
public struct StreamResult: Sendable {
    public var verdict: StreamVerdict
    /// The result's temporary holding the text so far, or -1 when all of it is in the verdict.
    public var spillFD: Int32
    public var spillPath: String

    public init(verdict: StreamVerdict, spillFD: Int32 = -1, spillPath: String = "") {
        self.verdict = verdict
        self.spillFD = spillFD
        self.spillPath = spillPath
    }
}

/// Everything one HTTP attempt produced, handed from the event loop to the finisher.
/// The `.partial` descriptor travels with it: the finisher fsyncs and closes it.
public struct AttemptOutcome: Sendable {
    /// How the attempt ended at the transport level.
    public enum Ending: Sendable, Equatable {
        /// The server sent a whole response (any status).
        case response(status: Int)
        /// libcurl gave up: connection refused, reset, a TLS failure.
        case transportError(code: Int32, message: String)
        /// A timer ended the attempt.
        case timedOut(AttemptFailure.Timer, message: String)
        /// Writing the `.partial` failed.
        case diskError(SystemError)
        /// The answer grew past `max_response_bytes`.
        case responseTooLarge(limit: Int64)
        /// Another daemon took the request over: this attempt must leave no trace.
        case leaseLost
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
    public let endpointIndex: Int
    public let endpointName: String
    /// Set for a streamed request; its descriptor travels like the `.partial`'s.
    public let stream: StreamResult?

    public init(task: TaskDescriptor, ending: Ending, partialFD: Int32, headers: [String: String] = [:], bytesSent: Int64 = 0,
                bytesReceived: Int64 = 0, startedAt: Date, endedAt: Date, endpointIndex: Int, endpointName: String,
                stream: StreamResult? = nil) {
        self.stream = stream
        self.task = task
        self.ending = ending
        self.partialFD = partialFD
        self.headers = headers
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.endpointIndex = endpointIndex
        self.endpointName = endpointName
    }
}

extension EndpointFeedback {
    /// What an attempt's end says about its endpoint. Pure.
    public static func from(_ ending: AttemptOutcome.Ending, headers: [String: String], now: Date) -> EndpointFeedback {
        switch ending {
        case .response(let status):
            let asked = RetryPolicy.requestedDelay(headers, now: now)
            if status == 429 { return EndpointFeedback(.retryableFailure, pauseSeconds: asked ?? 1) }
            if RetryPolicy.isRetryableStatus(status) { return EndpointFeedback(.retryableFailure, pauseSeconds: asked) }
            return EndpointFeedback(.answered, pauseSeconds: exhaustedLimitReset(headers))
        case .transportError(let code, _):
            return EndpointFeedback(RetryPolicy.permanentCurlCodes.contains(code) ? .neutral : .retryableFailure)
        case .timedOut:
            return EndpointFeedback(.retryableFailure)
        case .diskError, .cancelled, .responseTooLarge, .leaseLost:
            return EndpointFeedback(.neutral)
        }
    }

    /// When the provider says a limit is used up, how long until it resets.
    static func exhaustedLimitReset(_ headers: [String: String]) -> Double? {
        var pause: Double?
        for kind in ["requests", "tokens"] {
            guard let remaining = headers["x-ratelimit-remaining-\(kind)"].flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }),
                  remaining <= 0,
                  let reset = headers["x-ratelimit-reset-\(kind)"].flatMap(RetryPolicy.duration) else { continue }
            pause = max(pause ?? 0, reset)
        }
        return pause
    }
}
