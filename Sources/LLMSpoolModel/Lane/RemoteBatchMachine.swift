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
///
/// Two flows, by the intent's api. OpenAI: upload, then create with the group id in the
/// batch's metadata, which the list shows. Anthropic: no upload; `creating` is recorded
/// before the create, and a Message Batch has no metadata, so reconciling reads the list
/// for batches of the group's size made since the intent, and the first results line of
/// each that ended (`.inspect`): its custom_id carries the group id. A candidate still
/// running cannot be told apart: the list is read again after a poll interval until it
/// ends, rather than risk a second create.
public struct RemoteBatchMachine: Sendable {
    public enum Event: Sendable, Equatable {
        /// Start or resume from the record as it is.
        case start
        case uploaded(fileID: String)
        case created(batchID: String)
        /// A create whose outcome is unknown: the batch may exist.
        case createUncertain
        case listed(RemoteBatchListing)
        /// The first results line of a listed batch names `group` (nil: none can be read).
        case inspected(batchID: String, group: String?)
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
        /// A read was told the batch or file does not exist (404, 410). Tried again like a
        /// failure, since a provider's replicas may lag a create; `maximumGone` in a row
        /// abandon the group, whose answers can no longer come.
        case gone(message: String)
        /// The wait before `step` is over at `now`: the step is taken, unless the batch has
        /// outrun its deadline (a provider that keeps a batch running past its window).
        case due(Step, now: Double)
    }

    public enum Step: Sendable, Equatable {
        case upload
        case create
        /// List the provider's batches, newest first, from after `after` (a batch id).
        case list(after: String?)
        /// Anthropic: read the first results line of an ended batch the list found.
        case inspect(batchID: String)
        case poll
        case download(outputFileID: String?, errorFileID: String?)
        case split
        case publish
        /// Cancel the remote batch (`POST …/cancel`): every member was deleted.
        case cancel

        /// The step as the log names it, with the provider's id it acts on.
        public var name: String {
            switch self {
            case .upload: "upload"
            case .create: "create"
            case .list(let after): after.map { "list after \($0)" } ?? "list"
            case .inspect(let batch): "inspect \(batch)"
            case .poll: "poll"
            case .download(let output, let errors): "download" + (output.map { " output \($0)" } ?? "") + (errors.map { " errors \($0)" } ?? "")
            case .split: "split"
            case .publish: "publish"
            case .cancel: "cancel"
            }
        }
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
        /// Something the log must say (a list that repeats itself, a create that the provider's
        /// API cannot guard, a batch cancelled at its deadline); nothing to do.
        case warn(message: String)
    }

    /// How far back before the intent a listed batch can be ours: clocks differ.
    public static let listingSlackSeconds = 600
    /// Backoff of a failed step: `min(2^n, 300)` seconds.
    public static let maximumBackoff = 300.0
    /// Creates whose outcome was unknown and whose batch no list then showed, after which
    /// none is made: each may be a batch the provider made and hides, and paid for.
    public static let maximumUnprovenCreates = 3
    /// Reads told "not found" in a row (with backoffs of 2, 4, 8 and 16 s between them)
    /// after which the group is abandoned.
    public static let maximumGone = 5
    /// A batch still running this long after its group was made is cancelled: the
    /// providers' window is 24 h, and both end a batch that outruns it as `expired`, with
    /// some time to finalize a large one. `batch_deadline_seconds` in the config.
    public static let defaultDeadlineSeconds = 93_600.0
    /// A cancelled batch still not ended this long after its cancel is given up: its
    /// requests go live. A provider stuck in `cancelling` would hold them for ever.
    public static let cancelGraceSeconds = 3_600.0

    public private(set) var intent: RemoteIntent
    public private(set) var schedule: PollSchedule
    private var pending: Step?
    private var failures = 0
    /// `gone` events since the last step that went through.
    private var goneInARow = 0
    /// Creates in this run whose outcome was unknown and that no list has shown since.
    public private(set) var unprovenCreates = 0
    /// The pages of OpenAI's list read since its first: a page that leads back to one
    /// would page forever.
    private var listedPages: Set<String> = []
    /// Every member was deleted: the batch is cancelled as soon as its id is known.
    public private(set) var isWithdrawn = false
    /// Anthropic's reconciling: what one reading of the list found.
    private var candidates = Candidates()
    /// Listed batches whose results proved them another's: never inspected again.
    private var notOurs: Set<String> = []
    /// Seconds after the intent's time past which a running batch is cancelled.
    public let deadlineSeconds: Double
    /// A cancel of the batch was asked (by the deadline, or by every member's deletion).
    private var cancelAsked = false
    /// When the cancel's grace began: the deadline's decision, or the first step due after
    /// a cancel asked by a deletion.
    private var cancelGraceFrom: Double?
    /// A poll of this run said the batch still runs: a deadline is judged on what the
    /// provider says now, never on a status recorded before a restart.
    private var polledRunning = false
    /// When reconciling's first list fell due in this run.
    private var reconcilingSince: Double?

    /// What one reading of Anthropic's list found: the ended batches of the group's size to
    /// inspect, whether one of its size still runs, and the pages read (a page that leads
    /// back to one read would page forever).
    private struct Candidates: Sendable {
        var toInspect: [String] = []
        var running: [String] = []
        var pages: Set<String> = []
    }

    public init(intent: RemoteIntent, schedule: PollSchedule = PollSchedule(), deadlineSeconds: Double = RemoteBatchMachine.defaultDeadlineSeconds) {
        self.intent = intent
        self.schedule = schedule
        self.deadlineSeconds = deadlineSeconds
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .gone, .failed, .due: break
        default: goneInARow = 0
        }
        switch event {
        case .due(let step, let now):
            return due(step, now: now)
        case .start:
            if intent.api == .anthropic && intent.state == .intent {
                // No upload: the create may commit as soon as it is sent, so a restart must
                // know to look for its batch before it creates again.
                return advance(to: .creating, then: .create)
            }
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
            unprovenCreates += 1
            return perform(.list(after: nil))
        case .listed(let page):
            guard case .list(let after) = pending else { return [] }
            if intent.api == .anthropic { return listedMessageBatches(page, after: after) }
            if let mine = page.entries.first(where: { $0.group == intent.group }) {
                intent.batchID = mine.id
                unprovenCreates = 0
                return advance(to: .created, then: isWithdrawn ? .cancel : .poll)
            }
            if after == nil { listedPages = [] }
            let horizon = listingHorizon
            if page.hasMore, let last = page.entries.last, last.createdAt >= horizon {
                guard last.id != after, listedPages.insert(last.id).inserted else { return listRepeats(after: last.id, what: "batches") }
                return perform(.list(after: last.id))
            }
            if isWithdrawn {
                pending = nil
                return [.abandon(message: "every request of the group was deleted and no batch of it exists")]
            }
            return createAgain()
        case .inspected(let batchID, let group):
            guard pending == .inspect(batchID: batchID) else { return [] }
            candidates.toInspect.removeAll { $0 == batchID }
            if group == intent.group {
                intent.batchID = batchID
                unprovenCreates = 0
                return advance(to: .created, then: isWithdrawn ? .cancel : .poll)
            }
            notOurs.insert(batchID)
            return nextCandidate()
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
            polledRunning = true
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
            case .uploaded where pending == .create, .creating where pending == .create:
                // The next step is a create: no batch exists (a create that may have committed
                // is followed by a list, never by a create), so none is made.
                pending = nil
                return [.abandon(message: "every request of the group was deleted before its batch was created")]
            case .uploaded, .creating:
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
            cancelAsked = true
            failures = 0
            pending = .poll
            return [.perform(.poll)]
        case .failed(let retryable, let retryAfter, let message):
            guard let step = pending else { return [] }
            if step == .cancel && !retryable {
                // Refused (it ended meanwhile, say): the batch is polled to its end as usual,
                // within the grace a cancelled one has.
                cancelAsked = true
                pending = .poll
                return [.perform(.poll)]
            }
            guard retryable else {
                pending = nil
                return [.abandon(message: message)]
            }
            return later(step, retryAfter: retryAfter)
        case .gone(let message):
            guard let step = pending else { return [] }
            goneInARow += 1
            guard goneInARow < Self.maximumGone else {
                pending = nil
                return [.abandon(message: "\(message) (\(goneInARow) times in a row)")]
            }
            return later(step, retryAfter: nil)
        }
    }

    /// A step falls due. A batch a poll of this run found still running past the deadline
    /// is cancelled instead of polled; a cancel (retried, or polled to its end) that outlives
    /// its grace is given up; reconciling is given up once it has gone on, in this run, for
    /// the deadline and at least the default one (a batch of the group may well run: giving
    /// up sends its requests a second time). A restart starts each of these afresh, so it
    /// always looks at the provider before giving anything up.
    private mutating func due(_ step: Step, now: Double) -> [Action] {
        if case .list = step, pending == step, intent.state < .created {
            let since = reconcilingSince ?? now
            reconcilingSince = since
            let limit = max(deadlineSeconds, Self.defaultDeadlineSeconds)
            guard now - since >= limit else { return [.perform(step)] }
            pending = nil
            return [.abandon(message: "no batch of the group was found in \(Self.whole(now - since)) s of reconciling: its requests go live; "
                              + "a batch created but never listed would be paid for, and its answers are not read")]
        }
        guard step == .poll || step == .cancel, pending == step, let batch = intent.batchID,
              intent.state == .created || intent.state == .polling else {
            return [.perform(step)]
        }
        let status = intent.remoteStatus ?? "not yet polled"
        if step == .cancel { cancelAsked = true }
        if cancelAsked {
            let since = cancelGraceFrom ?? now
            cancelGraceFrom = since
            guard now - since >= Self.cancelGraceSeconds else { return [.perform(step)] }
            pending = nil
            return [.abandon(message: "the remote batch \(batch) is still \(status) \(Self.whole(now - since)) s after its cancel was asked: "
                              + "it is given up, and its requests go live")]
        }
        let age = now - Double(intent.createdAt)
        guard step == .poll, polledRunning, age >= deadlineSeconds else { return [.perform(step)] }
        cancelAsked = true
        cancelGraceFrom = now
        pending = .cancel
        failures = 0
        return [.warn(message: "the remote batch \(batch) is still \(status) \(Self.whole(age)) s after its group was made, past batch_deadline_seconds "
                      + "(\(Self.whole(deadlineSeconds))): it is cancelled, and its requests end as a cancelled batch's do"),
                .perform(.cancel)]
    }

    /// How far back the provider's list is read for a batch of the group: the intent's time
    /// less the slack, read from a record that may hold any number.
    private var listingHorizon: Int {
        let (horizon, overflow) = intent.createdAt.subtractingReportingOverflow(Self.listingSlackSeconds)
        return overflow ? Int.min : horizon
    }

    /// Whole seconds for a message; an intent's time from a record may be any number.
    private static func whole(_ seconds: Double) -> String {
        Int(exactly: seconds.rounded(.towardZero)).map(String.init) ?? "\(seconds)"
    }

    /// `step` again after a backoff, or the provider's Retry-After up to `max_retry_after_seconds`.
    private mutating func later(_ step: Step, retryAfter: Double?) -> [Action] {
        failures += 1
        let backoff = min(Double(1 << min(failures, 20)), Self.maximumBackoff)
        let asked = min(retryAfter ?? 0, schedule.maximumRetryAfter)
        return [.wait(seconds: max(asked, backoff), then: step)]
    }

    /// The create after a list that shows no batch of the group. After a create whose
    /// outcome was unknown, the next waits, longer each time, and past
    /// `maximumUnprovenCreates` none is made: the list is read again at the poll interval,
    /// and a batch of the group it shows is taken. A provider that commits creates it
    /// never lists costs a few batches, not one per round trip.
    private mutating func createAgain() -> [Action] {
        guard unprovenCreates > 0 else {
            // A message batch carries no group: one made but not listed yet cannot be seen.
            let warning: [Action] = intent.api == .anthropic
                ? [.warn(message: "no message batch of the group was found: it is created again; one created but not yet listed by the provider would be paid twice")]
                : []
            return warning + perform(.create)
        }
        guard unprovenCreates < Self.maximumUnprovenCreates else {
            pending = .list(after: nil)
            return [.warn(message: "\(unprovenCreates) creates got no answer and no list shows their batch; none is made again, "
                          + "and the list is read again in \(Int(schedule.interval)) s"),
                    .wait(seconds: schedule.interval, then: .list(after: nil))]
        }
        pending = .create
        let wait = min(Double(1 << min(unprovenCreates + 1, 20)), Self.maximumBackoff)
        return [.warn(message: "no batch of the group was found after a create that got no answer: it is created again in \(Int(wait)) s; "
                      + "one created but not yet listed by the provider would be paid twice"),
                .wait(seconds: wait, then: .create)]
    }

    /// The event a create that got no success amounts to: `status` is its HTTP status, nil
    /// when no answer came. Only an answer that proves nothing was committed (429, 409, other
    /// 4xx) may be retried as a create; anything else may have created the batch.
    public static func eventForFailedCreate(status: Int?, retryAfter: Double?, message: String) -> Event {
        guard let status, status != 408, status < 500 else { return .createUncertain }
        return .failed(retryable: status == 429 || status == 409, retryAfter: retryAfter, message: message)
    }

    /// One page of Anthropic's list: a batch made since the intent (less the slack) whose
    /// size is the group's may be the group's; one that ended is inspected, one that runs is
    /// waited for. The last page read, the candidates are taken in turn.
    private mutating func listedMessageBatches(_ page: RemoteBatchListing, after: String?) -> [Action] {
        if after == nil { candidates = Candidates() }
        let horizon = listingHorizon
        for entry in page.entries where entry.createdAt >= horizon && !notOurs.contains(entry.id) {
            if let total = entry.total, total != intent.members.count { continue }
            if entry.ended {
                if !candidates.toInspect.contains(entry.id) { candidates.toInspect.append(entry.id) }
            } else if !candidates.running.contains(entry.id) {
                candidates.running.append(entry.id)
            }
        }
        if page.hasMore, let last = page.entries.last, last.createdAt >= horizon {
            guard last.id != after, candidates.pages.insert(last.id).inserted else { return listRepeats(after: last.id, what: "message batches") }
            return perform(.list(after: last.id))
        }
        return nextCandidate()
    }

    /// A list whose page leads back to one read cannot say there is no batch of the group:
    /// nothing is created, and it is read again from the start, later each time.
    private mutating func listRepeats(after id: String, what: String) -> [Action] {
        if isWithdrawn {
            pending = nil
            return [.abandon(message: "every request of the group was deleted; the provider's list repeats itself after \(id), so a batch of the group cannot be found to cancel it")]
        }
        failures += 1
        pending = .list(after: nil)
        let backoff = min(Double(1 << min(failures, 20)), Self.maximumBackoff)
        return [.warn(message: "the provider's list of \(what) repeats itself after \(id); it is read again in \(Int(backoff)) s, and nothing is created until it ends"),
                .wait(seconds: backoff, then: .list(after: nil))]
    }

    /// Anthropic's reconciling, the list read: inspect the next ended candidate; wait for one
    /// that runs; create only when none is left.
    private mutating func nextCandidate() -> [Action] {
        if let next = candidates.toInspect.first { return perform(.inspect(batchID: next)) }
        if !candidates.running.isEmpty {
            if isWithdrawn {
                pending = nil
                return [.abandon(message: "every request of the group was deleted; a message batch that may be the group's (\(candidates.running.joined(separator: ", "))) still runs and cannot be told apart to cancel it")]
            }
            pending = .list(after: nil)
            return [.wait(seconds: schedule.interval, then: .list(after: nil))]
        }
        if isWithdrawn {
            pending = nil
            return [.abandon(message: "every request of the group was deleted and no batch of it exists")]
        }
        return createAgain()
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
