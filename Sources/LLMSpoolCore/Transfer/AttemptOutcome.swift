import Foundation

/// What the event loop made of a streamed answer while it arrived.
public struct StreamResult: Sendable {
    public var verdict: StreamVerdict
    /// The result's temporary holding the text so far, open; nil when all of it is in the verdict.
    public var spill: DescriptorOwner?
    public var spillPath: String

    public init(verdict: StreamVerdict, spill: DescriptorOwner? = nil, spillPath: String = "") {
        self.verdict = verdict
        self.spill = spill
        self.spillPath = spillPath
    }
}

/// Everything one HTTP attempt produced, handed from the event loop to the finisher.
/// The `.partial`'s descriptor travels with it, when the engine held one open: the
/// finisher reads the answer back through it (so it is open for reading and writing),
/// takes it, fsyncs through it and closes it; if nobody does, it closes with the
/// outcome's last copy.
public struct AttemptOutcome: Sendable {
    public typealias Ending = AttemptEnding

    public let task: TaskDescriptor
    public let ending: Ending
    public let partial: DescriptorOwner?
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
    /// The request file's bytes as they were sent from, for a format that makes its body
    /// (a prompt file's transcript is made from them).
    public let requestSource: [UInt8]?
    /// Where the raw answer is when it is not the `.partial` (a prompt file's stream,
    /// whose `.partial` holds the text).
    public let rawPath: String?
    /// The provider's batch that answered, for an outcome of the background lane.
    public var remoteBatch: String?
    /// A batch line's answer held in memory instead of a `.partial` (`BatchLineAnswer`;
    /// empty for a successful stream, whose raw events were not kept); nil when the answer
    /// is in the `.partial`.
    public var heldBody: [UInt8]?

    public init(task: TaskDescriptor, ending: Ending, partial: DescriptorOwner?, headers: [String: String] = [:], bytesSent: Int64 = 0,
                bytesReceived: Int64 = 0, startedAt: Date, endedAt: Date, endpointIndex: Int, endpointName: String,
                stream: StreamResult? = nil, requestSource: [UInt8]? = nil, rawPath: String? = nil) {
        self.rawPath = rawPath
        self.requestSource = requestSource
        self.stream = stream
        self.task = task
        self.ending = ending
        self.partial = partial
        self.headers = headers
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.endpointIndex = endpointIndex
        self.endpointName = endpointName
    }
}
