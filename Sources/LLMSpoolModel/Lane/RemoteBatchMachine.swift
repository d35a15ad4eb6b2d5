/// The life of one group's remote batch as a state machine: events from the provider's
/// answers in, the steps to take out. Every change of state comes out as `.record` before
/// the step that depends on it, and the caller performs the actions in order, stopping at
/// one that fails: so the record on disk is always at or behind the remote truth, and a
/// restart (`RemoteBatchRecovery`) resumes from it. Pure.
///
/// Never twice: `.create` is produced only right after an upload, or after the provider's
/// list was read to its end, or back past the intent's time, and showed no batch carrying the
/// group id. A create whose outcome is unknown (the connection dropped, a timeout, a 5xx) is
/// followed by a list, never by another create.
///
/// When every member is deleted (`.withdrawn`), a batch whose id is known is cancelled
/// and polled to its end; one being created is cancelled once its id is learnt; a group
/// with nothing remote ends.
public struct RemoteBatchMachine: Sendable {
    public enum Event: Sendable, Equatable {
        /// Start or resume from the record as it is.
        case start
        case uploaded(fileID: String)
        case created(batchID: String)
        /// A create whose outcome is unknown: the batch may exist.
        case createUncertain
        case listed(RemoteBatchListing)
        case polled(RemoteBatchStatus)
        case downloaded
        case split
        case published
        /// Every member's request was deleted: nobody wants the answers.
        case withdrawn
        /// The provider took the cancel (the batch ends `cancelling`, then `cancelled`).
        case cancelRequested
        /// The step asked for failed and did certainly not change anything remote.
        /// `retryable`: try it again after `retryAfter` or a backoff.
        case failed(retryable: Bool, retryAfter: Double?, message: String)
    }

    public enum Step: Sendable, Equatable {
        case upload
        case create
        /// List the provider's batches, newest first, from after `after` (a batch id).
        case list(after: String?)
        case poll
        case download(outputFileID: String?, errorFileID: String?)
        case split
        case publish
        /// Cancel the remote batch (`POST …/cancel`): every member was deleted.
        case cancel
    }

    public enum Action: Sendable, Equatable {
        /// Write the record durably before anything else.
        case record(RemoteIntent)
        case perform(Step)
        /// Perform `step` after `seconds`.
        case wait(seconds: Double, then: Step)
        /// Everything is published: remove the record.
        case finish
        /// The group cannot go this way (a refusal, a batch that names no file to read): its
        /// members are to be sent another way, with `message` in the log.
        case abandon(message: String)
    }

    /// How far back before the intent a listed batch can be ours: clocks differ.
    public static let listingSlackSeconds = 600
    /// Backoff of a failed step: `min(2^n, 300)` seconds.
    public static let maximumBackoff = 300.0

    public private(set) var intent: RemoteIntent
    public private(set) var schedule: PollSchedule
    private var pending: Step?
    private var failures = 0
    /// Every member was deleted: the batch is cancelled as soon as its id is known.
    public private(set) var isWithdrawn = false

    public init(intent: RemoteIntent, schedule: PollSchedule = PollSchedule()) {
        self.intent = intent
        self.schedule = schedule
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .start:
            return perform(RemoteBatchRecovery.firstStep(of: intent))
        case .uploaded(let fileID):
            guard pending == .upload else { return [] }
            intent.inputFileID = fileID
            return advance(to: .uploaded, then: .create)
        case .created(let batchID):
            guard pending == .create else { return [] }
            intent.batchID = batchID
            if isWithdrawn { return advance(to: .created, then: .cancel) }
            return advance(to: .created, then: .poll, wait: schedule.interval)
        case .createUncertain:
            guard pending == .create else { return [] }
            return perform(.list(after: nil))
        case .listed(let page):
            guard isListing else { return [] }
            if let mine = page.entries.first(where: { $0.group == intent.group }) {
                intent.batchID = mine.id
                return advance(to: .created, then: isWithdrawn ? .cancel : .poll)
            }
            let horizon = intent.createdAt - Self.listingSlackSeconds
            if page.hasMore, let last = page.entries.last, last.createdAt >= horizon {
                return perform(.list(after: last.id))
            }
            if isWithdrawn {
                pending = nil
                return [.abandon(message: "every request of the group was deleted and no batch of it exists")]
            }
            return perform(.create)
        case .polled(let status):
            guard pending == .poll else { return [] }
            intent.remoteStatus = status.status
            if status.hasEnded {
                // An expired or cancelled batch that ran nothing still ends each member's
                // wait (`LaneMemberVerdict`); one that failed ran nothing and goes live.
                guard status.outputFileID != nil || status.errorFileID != nil || status.status == "expired" || status.status == "cancelled" else {
                    return [.record(intent), .abandon(message: "the remote batch \(intent.batchID ?? "?") ended \(status.status) without an output or error file")]
                }
                intent.outputFileID = status.outputFileID
                intent.errorFileID = status.errorFileID
                return advance(to: .ended, then: .download(outputFileID: status.outputFileID, errorFileID: status.errorFileID))
            }
            let wait = schedule.next(after: status)
            if intent.state == .created { return advance(to: .polling, then: .poll, wait: wait) }
            failures = 0
            return [.wait(seconds: wait, then: .poll)]
        case .downloaded:
            guard case .download = pending else { return [] }
            return advance(to: .downloaded, then: .split)
        case .split:
            guard pending == .split else { return [] }
            return advance(to: .split, then: .publish)
        case .published:
            guard pending == .publish else { return [] }
            intent.state = .published
            pending = nil
            return [.finish]
        case .withdrawn:
            guard !isWithdrawn else { return [] }
            isWithdrawn = true
            switch intent.state {
            case .intent:
                // Nothing remote exists: the group simply ends.
                pending = nil
                return [.abandon(message: "every request of the group was deleted before anything remote existed")]
            case .uploaded where pending == .create:
                // The next step is a create: no batch exists (a create that may have committed
                // is followed by a list, never by a create), so none is made.
                pending = nil
                return [.abandon(message: "every request of the group was deleted before its batch was created")]
            case .uploaded:
                // A create may have committed: the list says, and a batch found is cancelled.
                return []
            case .created, .polling:
                guard intent.batchID != nil else { return [] }
                pending = .cancel
                failures = 0
                return [.perform(.cancel)]
            case .ended, .downloaded, .split, .published:
                // Over remotely: the answers are discarded as they are published.
                return []
            }
        case .cancelRequested:
            guard pending == .cancel else { return [] }
            failures = 0
            pending = .poll
            return [.perform(.poll)]
        case .failed(let retryable, let retryAfter, let message):
            guard let step = pending else { return [] }
            if step == .cancel && !retryable {
                // Refused (it ended meanwhile, say): the batch is polled to its end as usual.
                pending = .poll
                return [.perform(.poll)]
            }
            guard retryable else {
                pending = nil
                return [.abandon(message: message)]
            }
            failures += 1
            let backoff = min(Double(1 << min(failures, 20)), Self.maximumBackoff)
            return [.wait(seconds: max(retryAfter ?? 0, backoff), then: step)]
        }
    }

    /// The event a create that got no success amounts to: `status` is its HTTP status, nil
    /// when no answer came. Only an answer that proves nothing was committed (429, 409, other
    /// 4xx) may be retried as a create; anything else may have created the batch.
    public static func eventForFailedCreate(status: Int?, retryAfter: Double?, message: String) -> Event {
        guard let status, status != 408, status < 500 else { return .createUncertain }
        return .failed(retryable: status == 429 || status == 409, retryAfter: retryAfter, message: message)
    }

    private var isListing: Bool {
        if case .list = pending { return true }
        return false
    }

    private mutating func perform(_ step: Step?) -> [Action] {
        pending = step
        guard let step else { return [.finish] }
        return [.perform(step)]
    }

    private mutating func advance(to state: RemoteBatchState, then step: Step, wait: Double = 0) -> [Action] {
        intent.state = state
        failures = 0
        pending = step
        return [.record(intent), wait > 0 ? .wait(seconds: wait, then: step) : .perform(step)]
    }
}
