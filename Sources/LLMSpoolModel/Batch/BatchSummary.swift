/// `incoming/<name>.batch.json`, the last file of a batch: OpenAI's Batch object, so that
/// a program written for OpenAI's batches reads it as it is.
public struct BatchSummary: Sendable, Equatable {
    /// `completed`, `cancelled`, or `expired` (`max_lifetime_seconds` passed first); `failed`
    /// when its output was lost before it was published (`outputLost`).
    public enum Status: String, Sendable {
        case completed, cancelled, expired, failed
    }

    public var name: String
    public var status: Status
    /// The url of the batch's first line (OpenAI's `endpoint`).
    public var endpoint: String
    public var total: Int
    public var counts: BatchCounts
    public var createdAt: Int
    public var endedAt: Int
    public var inputFile: String
    public var outputFile: String
    /// `error_file_id` when a line did not succeed: the output's name with `.errors.jsonl`.
    public var errorFile: String {
        outputFile.hasSuffix(SpoolLayout.batchSuffix)
            ? String(outputFile.dropLast(SpoolLayout.batchSuffix.count)) + SpoolLayout.batchErrorsSuffix
            : outputFile + SpoolLayout.batchErrorsSuffix
    }
    public var completionWindow: String
    /// The output's `.partial` was removed before it got its name (by hand, while the end was
    /// held): the lines were sent and counted, but their answers are gone. The summary says so
    /// in `errors` (its status `failed`) and names no output nor errors file, rather than
    /// point at nothing.
    public var outputLost = false

    public init(name: String, status: Status, endpoint: String, total: Int, counts: BatchCounts, createdAt: Int, endedAt: Int,
                inputFile: String, outputFile: String, completionWindow: String = "24h") {
        self.name = name
        self.status = status
        self.endpoint = endpoint
        self.total = total
        self.counts = counts
        self.createdAt = createdAt
        self.endedAt = endedAt
        self.inputFile = inputFile
        self.outputFile = outputFile
        self.completionWindow = completionWindow
    }

    /// What a batch's hook is told of its end, read back from a summary on disk.
    public struct End: Sendable, Equatable {
        public var status: String
        public var total: Int
        public var completed: Int
        public var failed: Int
    }

    /// The status and request counts of a summary this type wrote, or nil when the bytes
    /// are not one (a hook owed is then run by nothing, and the note is kept).
    public static func end(of bytes: [UInt8]) -> End? {
        guard let value = try? RawJSON.parse(bytes), let status = value["status"].flatMap({ RawJSON.string($0, in: bytes) }),
              let counts = value["request_counts"] else { return nil }
        func integer(_ key: String) -> Int? {
            guard case .number(let range)? = counts[key], range.upperBound <= bytes.count else { return nil }
            return Int(String(decoding: bytes[range], as: UTF8.self))
        }
        guard let total = integer("total"), let completed = integer("completed"), let failed = integer("failed") else { return nil }
        return End(status: status, total: total, completed: completed, failed: failed)
    }

    /// The Batch object's `id`: stable for a name.
    public var id: String {
        "batch_" + TextEscaping.leftPadded(String(Fingerprint.hash(name.utf8), radix: 16), to: 16)
    }

    /// OpenAI's `errors` list, with the one error of an output lost.
    static let outputLostErrors = JSONWriter.object([
        ("object", JSONWriter.quoted("list")),
        ("data", JSONWriter.array([JSONWriter.object([
            ("code", JSONWriter.quoted("output_removed")),
            ("message", JSONWriter.quoted("the batch's output was removed before it was published; its answers are lost")),
            ("param", JSONWriter.null),
            ("line", JSONWriter.null),
        ])])),
    ])

    public func encoded() -> [UInt8] {
        let cancelled = status == .cancelled
        let expired = status == .expired
        let ended = JSONWriter.number(endedAt)
        let usage = JSONWriter.object([
            ("input_tokens", JSONWriter.number(counts.inputTokens)),
            ("input_tokens_details", JSONWriter.object([("cached_tokens", JSONWriter.number(0))])),
            ("output_tokens", JSONWriter.number(counts.outputTokens)),
            ("output_tokens_details", JSONWriter.object([("reasoning_tokens", JSONWriter.number(0))])),
            ("total_tokens", JSONWriter.number(counts.inputTokens > Int.max - counts.outputTokens ? Int.max : counts.inputTokens + counts.outputTokens)),
        ])
        return JSONWriter.object([
            ("id", JSONWriter.quoted(id)),
            ("object", JSONWriter.quoted("batch")),
            ("endpoint", JSONWriter.quoted(endpoint)),
            ("errors", outputLost ? Self.outputLostErrors : JSONWriter.null),
            ("input_file_id", JSONWriter.quoted(inputFile)),
            ("completion_window", JSONWriter.quoted(completionWindow)),
            ("status", JSONWriter.quoted(status.rawValue)),
            ("output_file_id", outputLost ? JSONWriter.null : JSONWriter.quoted(outputFile)),
            // The errors file holds the lines that did not succeed, when there are any.
            ("error_file_id", counts.notSucceeded > 0 && !outputLost ? JSONWriter.quoted(errorFile) : JSONWriter.null),
            ("created_at", JSONWriter.number(createdAt)),
            ("in_progress_at", JSONWriter.number(createdAt)),
            ("expires_at", JSONWriter.null),
            ("finalizing_at", ended),
            ("completed_at", status == .completed ? ended : JSONWriter.null),
            ("failed_at", status == .failed ? ended : JSONWriter.null),
            ("expired_at", expired ? ended : JSONWriter.null),
            ("cancelling_at", cancelled ? ended : JSONWriter.null),
            ("cancelled_at", cancelled ? ended : JSONWriter.null),
            ("request_counts", JSONWriter.object([("total", JSONWriter.number(total)), ("completed", JSONWriter.number(counts.succeeded)),
                                                  ("failed", JSONWriter.number(counts.notSucceeded))])),
            ("usage", usage),
            ("metadata", JSONWriter.null),
        ]) + [0x0A]
    }
}
