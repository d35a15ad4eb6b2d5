/// What one poll of a remote batch said (OpenAI's Batch object, the parts the lane reads).
public struct RemoteBatchStatus: Sendable, Equatable {
    /// The provider's status: `validating`, `in_progress`, `finalizing`, `cancelling`, or an
    /// end, `completed`, `failed`, `expired`, `cancelled`.
    public var status: String
    public var total: Int
    public var completed: Int
    public var failed: Int
    public var outputFileID: String?
    public var errorFileID: String?

    public static let endings: Set<String> = ["completed", "failed", "expired", "cancelled"]

    public init(status: String, total: Int = 0, completed: Int = 0, failed: Int = 0,
                outputFileID: String? = nil, errorFileID: String? = nil) {
        self.status = status
        self.total = total
        self.completed = completed
        self.failed = failed
        self.outputFileID = outputFileID
        self.errorFileID = errorFileID
    }

    public var hasEnded: Bool { Self.endings.contains(status) }
}
