import FoundationEssentials

/// The persisted state of one task, `state/<id>.json`: its attempts (so that the attempt
/// count and the next-attempt time survive a restart) and the commit point of its outcome.
///
/// The finisher writes the record with the final status *before* it publishes the outcome,
/// so a daemon that dies half-way through publishing finds, on restart, a request whose
/// record says it already ended, and completes the clean-up instead of running it again:
/// - `done` with `result_inode` equal to the inode of `incoming/<id>.json`: remove the request.
/// - `failed`: write the error record it carries if missing, move the request to `failed`.
/// A record whose `request` identity differs from the file in `outgoing` belongs to an
/// earlier request of the same name and is ignored. Whoever moves a failed request back to
/// `outgoing` (the `retry` command) removes its record first.
public struct TaskRecord: Sendable, Equatable {
    public enum Status: String, Sendable {
        case active, done, failed, cancelled
    }

    public var id: String
    public var status: Status
    public var request: FileIdentity?
    public var history: TaskHistory
    /// The endpoint that answered, for a done task.
    public var endpoint: String?
    /// Token counts from the answer's `usage`.
    public var usage: [String: Int]?
    /// The inode of the published result, for a done task.
    public var resultInode: UInt64?
    /// The error record to publish, for a failed task.
    public var errorRecord: [UInt8]?
    /// The failure was committed but its error record could not be written (`failed/`
    /// unwritable): a start may write it from `errorRecord`. Without the mark, an error
    /// record missing is one its consumer took, never written again.
    public var errorRecordOwed = false
    /// The `Dialect.id` the request was validated as, for a done task: what `show` and
    /// `wait` read the result as once the request file is gone.
    public var dialect: String?

    public init(id: String, status: Status, request: FileIdentity?, history: TaskHistory, endpoint: String? = nil,
                usage: [String: Int]? = nil, resultInode: UInt64? = nil, errorRecord: [UInt8]? = nil) {
        self.id = id
        self.status = status
        self.request = request
        self.history = history
        self.endpoint = endpoint
        self.usage = usage
        self.resultInode = resultInode
        self.errorRecord = errorRecord
    }
}
