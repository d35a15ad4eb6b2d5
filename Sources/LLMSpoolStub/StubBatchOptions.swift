/// How the stub's Batch API behaves: how long a batch runs, and the faults its uploads,
/// creates, polls and output downloads meet, in order (the first upload meets the first
/// upload fault, and so on).
public struct StubBatchOptions: Sendable, Equatable {
    /// One misbehaviour of one upload, create, poll or download.
    public enum Fault: Sendable, Equatable {
        /// Answer this status with an OpenAI error body and change nothing.
        case status(Int)
        /// Answer 401 with an error whose message repeats the key the call carried, as a
        /// provider refusing a key does, and change nothing (the daemon must blank it out).
        case echoKey
        /// Commit the create, then drop the connection before the answer's body ends.
        case lost
        /// Send the first half of a batch's output (up to the end of a line, when one ends
        /// there), then drop the connection.
        case cut
        /// Send a poll's answer one byte every half second: a provider that never quite
        /// stops and never finishes.
        case trickle
    }

    /// Seconds from a batch's creation to its end (`metadata.stub_seconds` overrides it).
    public var seconds: Double
    public var uploadFaults: [Fault]
    public var createFaults: [Fault]
    /// Met by the retrieves of one batch (`GET /v1/batches/{id}`, `GET /v1/messages/batches/{id}`).
    public var pollFaults: [Fault]
    /// Met by the downloads of a batch's output: OpenAI's output and error files' content,
    /// Anthropic's results (the first-line reads of reconciling included).
    public var downloadFaults: [Fault]
    /// How every batch ends when its time comes: `completed`, `expired` (the provider's
    /// window passed: only the lines not directed otherwise ran), or `failed` (OpenAI only:
    /// the input refused as a whole, no line ran; Anthropic's message batches have no such
    /// ending and end `completed`).
    public var ending: String

    /// The endings `--batch-ending` takes.
    public static let endings = ["completed", "expired", "failed"]

    public init(seconds: Double = 0, uploadFaults: [Fault] = [], createFaults: [Fault] = [], pollFaults: [Fault] = [], downloadFaults: [Fault] = [],
                ending: String = "completed") {
        self.seconds = seconds
        self.ending = ending
        self.uploadFaults = uploadFaults
        self.createFaults = createFaults
        self.pollFaults = pollFaults
        self.downloadFaults = downloadFaults
    }

    /// Reads `upload:500,create:429,create:lost,poll:echo_key,download:cut`; a failure names
    /// the first entry it cannot read.
    public static func faults(_ text: String) -> Result<(upload: [Fault], create: [Fault], poll: [Fault], download: [Fault]), BatchFaultError> {
        var upload: [Fault] = []
        var create: [Fault] = []
        var poll: [Fault] = []
        var download: [Fault] = []
        for entry in text.split(separator: ",") {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { return .failure(BatchFaultError(entry: String(entry))) }
            let fault: Fault
            if parts[1] == "lost" {
                fault = .lost
            } else if parts[1] == "cut" {
                fault = .cut
            } else if parts[1] == "trickle" {
                fault = .trickle
            } else if parts[1] == "echo_key" {
                fault = .echoKey
            } else if let status = Int(parts[1]), (400...599).contains(status) {
                fault = .status(status)
            } else {
                return .failure(BatchFaultError(entry: String(entry)))
            }
            switch (parts[0], fault) {
            case ("upload", .status), ("upload", .echoKey): upload.append(fault)
            case ("create", .status), ("create", .lost), ("create", .echoKey): create.append(fault)
            case ("poll", .echoKey), ("poll", .trickle), ("poll", .status): poll.append(fault)
            case ("download", .cut): download.append(fault)
            default: return .failure(BatchFaultError(entry: String(entry)))
            }
        }
        return .success((upload, create, poll, download))
    }
}

/// A `--batch-faults` entry that is not `upload:<status>`, `create:<status>`, `create:lost`,
/// `poll:<status>`, `<upload|create|poll>:echo_key`, `poll:trickle` or `download:cut`.
public struct BatchFaultError: Error, Sendable, Equatable, CustomStringConvertible {
    public var entry: String
    public var description: String {
        "--batch-faults: \"\(entry)\" is not upload:<status>, create:<status>, poll:<status>, create:lost, upload:echo_key, create:echo_key, poll:echo_key, poll:trickle or download:cut"
    }
}
