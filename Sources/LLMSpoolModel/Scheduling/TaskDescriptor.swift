import FoundationEssentials

/// One attempt, as the records keep it.
public struct AttemptEntry: Sendable, Equatable {
    public var startedAt: Date
    public var endedAt: Date
    public var endpoint: String
    /// "ok", or the failure's kind.
    public var outcome: String
    public var message: String?
    public var httpStatus: Int?
    public var timer: String?
    public var bytesSent: Int64
    public var bytesReceived: Int64
    /// The provider's batch that carried the attempt, when it went through the background lane.
    public var remoteBatch: String?
    /// The provider's id of the request (`ProviderRequestID`), when its answer named one.
    public var providerRequestID: String?

    public init(startedAt: Date, endedAt: Date, endpoint: String, outcome: String, message: String? = nil,
                httpStatus: Int? = nil, timer: String? = nil, bytesSent: Int64 = 0, bytesReceived: Int64 = 0) {
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.endpoint = endpoint
        self.outcome = outcome
        self.message = message
        self.httpStatus = httpStatus
        self.timer = timer
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }
}

/// What a task has been through: it survives restarts in the task's record.
public struct TaskHistory: Sendable, Equatable {
    public var firstSeen: Date
    public var attempts: [AttemptEntry] = []
    /// No attempt starts before this.
    public var notBefore: Date?
    /// The endpoint (index in the fallback list) the next attempt tries first.
    public var preferredEndpoint = 0
    /// Attempts started since the last one that ended: more than zero at a start means the
    /// daemon died while this request was in flight (see `CrashGuard`).
    public var unfinishedStarts = 0

    public init(firstSeen: Date, attempts: [AttemptEntry] = [], notBefore: Date? = nil, preferredEndpoint: Int = 0,
                unfinishedStarts: Int = 0) {
        self.unfinishedStarts = unfinishedStarts
        self.firstSeen = firstSeen
        self.attempts = attempts
        self.notBefore = notBefore
        self.preferredEndpoint = preferredEndpoint
    }
}

/// A validated request, ready to upload, with its history.
public struct TaskDescriptor: Sendable, Equatable {
    public let id: String
    public let requestPath: String
    public let summary: RequestSummary
    public let identity: FileIdentity?
    public var history: TaskHistory
    /// Found under the claim of a daemon that is gone: it had started, so it goes first.
    public var takenOver = false
    /// The one endpoint (index) this task may go to: it waits for it, never falls back.
    public var pinnedEndpoint: Int?
    /// Where a batch file's line lies in its input (`requestPath`), without its newline;
    /// nil for a request file. The background lane holds a waiting line by it.
    public var line: Range<Int>?
    /// No task record of the id was on disk when intake read the file: its first start may be
    /// journaled instead of recorded (`StartJournal`).
    public var recordless = false

    public init(id: String, requestPath: String, summary: RequestSummary, identity: FileIdentity? = nil, history: TaskHistory? = nil) {
        self.id = id
        self.requestPath = requestPath
        self.summary = summary
        self.identity = identity
        self.history = history ?? TaskHistory(firstSeen: Date())
    }
}

/// What intake learned about one file in `outgoing`.
public enum Intake: Sendable, Equatable {
    case valid(TaskDescriptor)
    case invalid(id: String, requestPath: String, problem: RequestProblem)
    /// The task's record says it already ended (the daemon stopped before cleaning up):
    /// finish the clean-up, never run it again.
    case alreadyEnded(id: String, requestPath: String)

    public var id: String {
        switch self {
        case .valid(let task): task.id
        case .invalid(let id, _, _): id
        case .alreadyEnded(let id, _): id
        }
    }

    /// The file it is about.
    public var requestPath: String {
        switch self {
        case .valid(let task): task.requestPath
        case .invalid(_, let path, _): path
        case .alreadyEnded(_, let path): path
        }
    }
}
