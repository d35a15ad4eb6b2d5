import Foundation
import Glibc
import Synchronization

/// Runs batch files (`outgoing/<name>.jsonl`): validates each whole before anything is
/// sent, feeds its lines to the scheduler a window at a time (each line a task like any
/// request, sent from the file in place), appends the output line of each ended line and
/// commits it in the batch's journal in groups (one fsync of the output and one of the
/// journal for all the lines that ended together), and publishes the end. One thread,
/// `batch`, owns every batch's state; other threads only post to its inbox.
public final class BatchRunner: @unchecked Sendable {
    // @unchecked Sendable holds because every `var` (`batches`, `settling`, `unpublished`, `draining`,
    // `orphanSweepDue`...) is touched only on the batch thread; the inbox and the other shared
    // state are Mutexes or atomics, and the rest is immutable.

    /// What the configuration decides.
    public struct Settings: Sendable {
        public var limits: BatchValidator.Limits
        /// Lines of one batch handed to the scheduler and not yet committed, at most.
        public var window: Int
        public var maxLifetimeSeconds: Double
        /// `max_attempts`: a restarted line's history is never made longer.
        public var maxAttempts: Int
        public var settleSeconds: Double
        /// The lease time of a shared spool's claims: how often a batch another daemon
        /// holds is looked at again.
        public var leaseSeconds = 30.0
        /// Where the scheduler sends each line (the daemon sets it from the endpoints), so
        /// that lines that may wait are fed under the background lane's window.
        public var routing = LaneRouting()
        /// Lines of one batch in the background lane, at most: one remote batch's worth.
        public var backgroundWindow: Int
        /// Lines handed to the lane and not yet taken in by its thread past which lines
        /// that may wait are not fed (`BatchLineFeed.laneBacklogLimit`).
        public var laneBacklogLimit = BatchLineFeed.defaultLaneBacklogLimit
        /// `min_free_bytes`: room a takeover's copies leave on the spool's filesystem.
        public var minFreeBytes: UInt64 = 0

        public init(_ config: Config) {
            limits = BatchValidator.Limits(maxLines: config.maxBatchLines, maxBytes: config.maxBatchBytes,
                                           maxLineBytes: config.maxRequestBytes, maxDepth: config.maxJSONDepth)
            window = max(64, 2 * config.concurrency)
            maxLifetimeSeconds = config.retry.maxLifetimeSeconds
            maxAttempts = config.retry.maxAttempts
            settleSeconds = config.settleSeconds
            leaseSeconds = config.leaseSeconds
            backgroundWindow = config.batchLimits.maxRequests
            minFreeBytes = config.minFreeBytes
        }
    }

    /// How a batch ended, for hooks and callers.
    public struct EndReport: Sendable, Equatable {
        public var name: String
        /// `completed`, `cancelled`, `expired`, or `failed` (refused at validation, or its
        /// output lost before it was published).
        public var status: String
        public var total: Int
        public var succeeded: Int
        public var failed: Int
        public var outputPath: String
        public var summaryPath: String
    }

    /// One line that ended, as the finisher reports it: `lane` and `endpoint` say where its
    /// usage is counted once the line is committed.
    struct Ended {
        var entry: Int
        var customID: String?
        var result: BatchLineResult
        var usage: [String: Int]?
        var lane: Metrics.Lane = .live
        var endpoint: String?
    }

    /// A line's failed attempt that is retried: journalled, then the retry goes to the scheduler.
    struct Attempted {
        var entry: Int
        var task: TaskDescriptor
        var at: Double
        var attempts: BatchLineAttempts { BatchLineAttempts(history: task.history) }
    }

    enum Message {
        case found(String)
        case removed(String)
        case ended(batch: String, Ended)
        case attempted(batch: String, Attempted)
        /// Another daemon holds the batch's claim now.
        case lost(String)
        case stop
    }

    /// A batch held by a failed start or end, as `status` shows it.
    struct HeldBatch {
        var progress: BatchProgress
        /// Its end failed after the summary was written: the next try only removes the
        /// input and the journal, not publishing the summary again with a new end time.
        var summaryWritten = false
        /// An end's journal as it was published from: tried again from memory, neither read
        /// nor validated again, and still once its file is removed meanwhile.
        var journal: BatchJournal?
        /// Its end failed before the output got its name: a `.partial` gone since was
        /// removed (its answers lost), not published, whatever recovery makes of its absence.
        var outputUnnamed = false
    }

    /// The messages for the batch thread; `closed` once it has ended and takes no more.
    struct Inbox {
        var messages: [Message] = []
        var closed = false
    }

    /// A batch being run.
    final class Batch {
        let name: String
        let inputPath: String
        /// The input, open for the batch's life: a deleted input's lines can still be read.
        var input: FileDescriptor?
        var fd: Int32 { input?.rawValue ?? -1 }
        let identity: FileIdentity
        let index: BatchIndex
        var journal: BatchJournal
        var journalFile: FileDescriptor?
        var outputFile: FileDescriptor?
        var journalFD: Int32 { journalFile?.rawValue ?? -1 }
        var outputFD: Int32 { outputFile?.rawValue ?? -1 }
        var next = 0
        var inWindow = Set<Int>()
        /// The lines of `inWindow` fed to the background lane.
        var laned = Set<Int>()
        /// The line at `next`, read but not fed: its lane had no room.
        var peeked: (entry: Int, task: TaskDescriptor)?
        /// Whether its feed has waited for the lane's backlog (logged once).
        var waitedForLane = false
        /// Ended lines not yet committed (a write that failed is tried again).
        var ended: [Ended] = []
        /// Retried lines whose attempts are not journalled yet.
        var attempted: [Attempted] = []
        /// Lines ended that no custom_id could be found for (`commit`): never committed, they
        /// must not hold the batch's end up.
        var unnamed = Set<Int>()
        var cancelled = false
        /// `max_lifetime_seconds` passed: stopped like a cancellation, its lines end `expired`.
        var expiring = false
        /// Its claim was lost to another daemon: nothing more of it is written or sent here.
        var abandoned = false
        /// When a commit that failed is tried again.
        var commitRetry = BatchCommitRetry()

        init(name: String, inputPath: String, fd: consuming FileDescriptor, identity: FileIdentity, index: BatchIndex, journal: BatchJournal,
             journalFD: consuming FileDescriptor, outputFD: consuming FileDescriptor) {
            self.name = name
            self.inputPath = inputPath
            input = consume fd
            self.identity = identity
            self.index = index
            self.journal = journal
            journalFile = consume journalFD
            outputFile = consume outputFD
        }
    }

    private let layout: SpoolLayout
    private let settings: Mutex<Settings>
    private let logger: Logger
    private let executor: PublicationExecutor<SpoolFiles>
    private let post: @Sendable (Scheduler.Event) -> Void
    private let metrics: Metrics
    private let onEnd: @Sendable (EndReport) -> Void
    private let inbox = Mutex(Inbox())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    /// Set by `finish`: a validation under way gives up, and the file is read again next time.
    private let stopRequested = Atomic<Bool>(false)
    private let live = Mutex<[String: BatchProgress]>([:])
    private var batches: [String: Batch] = [:] {
        // Kept for other threads (`runs`): the background lane adopts a group carrying lines
        // of a batch only while the batch runs here.
        didSet { running.withLock { $0 = Set(batches.keys) } }
    }
    private let running = Mutex<Set<String>>([])
    private var settling: [String: Double] = [:]
    /// Batches ended whose publication failed, with the counts `status` shows for them
    /// meanwhile; each is tried again after its pause (`retryHeldBatches`).
    private var unpublished = BatchRetries<HeldBatch>()
    /// Batches validated whose start failed, with what `status` shows for them meanwhile.
    private var unstarted = BatchRetries<HeldBatch>()
    /// Journal names at which the last sweep found no file (warned about once).
    private var strayJournals = Set<String>()
    /// Batches whose claim was lost here: the lines the lost run had in flight and not yet
    /// reported ended, when the claim was lost and when that was last logged
    /// (`BatchClaimRules.mayRunAgain`).
    private var abandonedLines: [String: (entries: Set<Int>, since: Double, warnedAt: Double)] = [:]
    private var draining = false
    /// The lines handed to the background lane that its thread has not taken in yet.
    private let laneBacklog: @Sendable () -> Int
    /// A feed held back only by the lane's backlog: the next round comes soon, not when a
    /// line ends.
    private var feedWaitsForLane = false
    /// When journals are next looked at for orphans.
    private var orphanSweepDue = 0.0
    /// When copies left by a crash are next looked for (`HeldCopyLeftovers`): `incoming` may
    /// hold a million results, so not at every sweep of the journals.
    private var heldCopySweepDue = Date().timeIntervalSince1970 + SpoolLayout.heldCopyLeftoverSeconds
    /// Names of batches being cancelled, for the finisher threads: their lines are not retried.
    private let stopping = Mutex<Set<String>>([])
    /// The claims of a spool several daemons share; nil when this daemon has it alone.
    private let leases: LeaseManager?
    /// Whether a batch's end notes the hook it owes (`HookRecovery`): set at start when a
    /// hook is configured and one daemon has the spool.
    private let notesHooks = Atomic<Bool>(false)

    /// Notes each batch's hook owed from now on (`noteHooks(true)`), or not.
    public func noteHooks(_ on: Bool) {
        notesHooks.store(on, ordering: .relaxed)
    }

    private func hookNote(_ name: String) -> String? {
        notesHooks.load(ordering: .relaxed) ? layout.pendingBatchHook(name) : nil
    }
    /// Has the background lane adopt the groups whose follower is gone, before the lines of a
    /// batch taken over from a dead daemon are fed again (see `consider`).
    private let adoptLaneGroups: @Sendable () -> Void
    /// Whether a group of the background lane not followed here carries lines of a batch
    /// (`BackgroundLane.groupElsewhereCarriesLines`): its lines then wait for that group.
    private let laneGroupElsewhere: @Sendable (String) -> Bool
    /// Tells the background lane a batch's claim was lost (`BackgroundLane.batchLost`),
    /// before the batch's lines in flight are withdrawn.
    private let laneBatchLost: @Sendable (String) -> Void

    public init(layout: SpoolLayout, settings: Settings, logger: Logger, metrics: Metrics = Metrics(), leases: LeaseManager? = nil,
                post: @escaping @Sendable (Scheduler.Event) -> Void, onEnd: @escaping @Sendable (EndReport) -> Void = { _ in },
                laneBacklog: @escaping @Sendable () -> Int = { 0 }, adoptLaneGroups: @escaping @Sendable () -> Void = {},
                laneGroupElsewhere: @escaping @Sendable (String) -> Bool = { _ in false },
                laneBatchLost: @escaping @Sendable (String) -> Void = { _ in }) {
        self.laneBacklog = laneBacklog
        self.laneBatchLost = laneBatchLost
        self.adoptLaneGroups = adoptLaneGroups
        self.laneGroupElsewhere = laneGroupElsewhere
        self.leases = leases
        self.metrics = metrics
        self.layout = layout
        self.settings = Mutex(settings)
        self.logger = logger
        self.post = post
        self.onEnd = onEnd
        self.executor = PublicationExecutor(files: SpoolFiles(layout: layout, shared: leases != nil))
    }

    public func start() {
        NamedThread.start("batch") { [self] in run() }
    }

    public func reconfigure(_ settings: Settings) {
        self.settings.withLock { $0 = settings }
    }

    /// The watcher found `outgoing/<name>.jsonl` (or saw it change).
    public func found(_ name: String) { send(.found(name)) }
    /// `outgoing/<name>.jsonl` left: the batch is cancelled.
    public func removed(_ name: String) { send(.removed(name)) }

    /// A line's task ended; the finisher says how. Its output is committed in a group.
    func lineEnded(_ line: BatchLineRef, customID: String?, result: BatchLineResult, usage: [String: Int]?,
                   lane: Metrics.Lane = .live, endpoint: String? = nil) {
        send(.ended(batch: line.batch, Ended(entry: line.entry, customID: customID, result: result, usage: usage, lane: lane, endpoint: endpoint)))
    }

    /// A line's failed attempt is retried: its attempts (and its wait) are journalled with
    /// the next group, and only then is the retry handed to the scheduler (which keeps the
    /// task finishing until it arrives), so a restart does not give the line its attempts
    /// again. The finisher thread does not wait for it.
    func lineRetrying(_ line: BatchLineRef, task: TaskDescriptor, at: Double) {
        let attempted = Attempted(entry: line.entry, task: task, at: at)
        let sent = inbox.withLock { inbox -> Bool in
            guard !inbox.closed else { return false }
            inbox.messages.append(.attempted(batch: line.batch, attempted))
            return true
        }
        if sent { wake.signal() } else { answer(attempted, durable: false) }
    }

    /// Commits what has ended, then stops the thread; lines not committed run again next time.
    public func finish() {
        stopRequested.store(true, ordering: .relaxed)
        send(.stop)
        stopped.wait()
    }

    /// The keeper found the batch's claim held by another daemon: the batch is dropped here.
    public func leaseLost(_ name: String) { send(.lost(name)) }

    /// Whether the batch `name` runs here now: read, validated, and begun or resumed (any
    /// thread). Its claim alone does not say so: a batch claimed to be looked at and not run
    /// is let go again.
    public func runs(batch name: String) -> Bool {
        running.withLock { $0.contains(name) }
    }

    /// The running batches' counts, for the live status.
    public var progress: [BatchProgress] { live.withLock { Array($0.values) }.sorted { $0.name < $1.name } }

    private func send(_ message: Message) {
        inbox.withLock { $0.messages.append(message) }
        wake.signal()
    }

    /// Hands a retried line to the scheduler, its attempts journalled or not (the daemon is
    /// stopping, or the journal refused them: the line is retried all the same).
    private func answer(_ attempted: Attempted, durable: Bool) {
        if !durable {
            logger.debug("the line's attempts are not journalled; a restart before its next attempt gives them again", id: attempted.task.id)
        }
        post(.retry(attempted.task, at: attempted.at))
    }

    private func run() {
        recoverOrphans()
        while true {
            _ = wake.wait(timeout: .now() + (feedWaitsForLane ? 0.01 : 0.5))
            feedWaitsForLane = false
            var messages: [Message] = []
            inbox.withLock { swap(&messages, &$0.messages) }
            var stop = false
            for message in messages {
                switch message {
                case .found(let name):
                    // A held batch is looked at when its pause is over (`retryHeldBatches`): a
                    // polling watcher reports every file in outgoing each round, and each look
                    // reads and validates the whole input (2 tries a second on a polled spool).
                    let now = TransferEngine.monotonic()
                    if !unpublished.isWaiting(name, now: now) && !unstarted.isWaiting(name, now: now) { consider(name) }
                case .removed(let name):
                    cancel(name, because: "the input was removed from outgoing")
                    // Run by no one here: its journal, if it has one, may be an orphan now.
                    if batches[name] == nil { orphanSweepDue = 0 }
                case .lost(let name): if let batch = batches[name] { abandon(batch) }
                case .ended(let name, let ended):
                    if let batch = batches[name] { batch.ended.append(ended) } else { abandonedLineReported(name, ended.entry) }
                case .attempted(let name, let attempted):
                    if let batch = batches[name], batch.cancelled {
                        // Cancelled since the finisher looked: the line is not sent again.
                        batch.ended.append(Ended(entry: attempted.entry, customID: attempted.task.summary.customID,
                                                 result: batch.expiring ? .expired : .cancelled, usage: nil))
                        post(.finalized(id: attempted.task.id))
                    } else if let batch = batches[name] {
                        // A line of the background lane that failed is retried live.
                        batch.laned.remove(attempted.entry)
                        batch.attempted.append(attempted)
                    } else {
                        // No batch runs under the name any more: its lines are not sent.
                        abandonedLineReported(name, attempted.entry)
                        post(.finalized(id: attempted.task.id))
                    }
                case .stop: stop = true
                }
            }
            if stop { draining = true }
            for batch in Array(batches.values) {
                noticeChangeInPlace(batch)
                commit(batch)
                feed(batch)
                finishIfDone(batch)
            }
            recheckSettling()
            if !stop { retryHeldBatches() }
            if !stop && Date().timeIntervalSince1970 >= orphanSweepDue { recoverOrphans() }
            publishProgress()
            if stop {
                for batch in batches.values {
                    if !batch.ended.isEmpty {
                        logger.error("stopping with answered lines of the batch that could not be written; they are sent (and paid) again at the next start",
                                     id: batch.name, ["lines": "\(batch.ended.count)", "reason": LogValue(batch.commitRetry.problem ?? "unknown")])
                    }
                    for attempted in batch.attempted { answer(attempted, durable: false) }
                    // The next start resumes from the output by name; not one another daemon
                    // took over since (its copy has the name).
                    if leases?.stillMine(BatchClaimRules.claimID(batch: batch.name)) != false {
                        logger.bestEffort("writing the batch's output again", id: batch.name) { try keepOutputNamed(batch) }
                        logger.bestEffort("writing the batch's journal again", id: batch.name) { try keepJournalNamed(batch) }
                    }
                    close(batch)
                    // Unfinished: free at once for another daemon to resume.
                    leases?.release(BatchClaimRules.claimID(batch: batch.name), ended: BatchClaimRules.releaseEnds(batchEnded: false))
                }
                batches.removeAll()
                publishProgress()
                let left = inbox.withLock { inbox -> [Message] in
                    inbox.closed = true
                    defer { inbox.messages = [] }
                    return inbox.messages
                }
                for case .attempted(_, let attempted) in left { answer(attempted, durable: false) }
                stopped.signal()
                return
            }
        }
    }

    // MARK: intake

    /// Whether the batch is being cancelled or has expired: a line that failed is then not tried again.
    func isStopping(_ name: String) -> Bool {
        stopping.withLock { $0.contains(name) }
    }

    private func consider(_ name: String) {
        if let lost = abandonedLines[name], !BatchClaimRules.mayRunAgain(outstanding: lost.entries.count) {
            let now = Date().timeIntervalSince1970
            settling[name] = now + 1
            if now - lost.warnedAt >= BatchClaimRules.abandonedLinesWarnSeconds {
                abandonedLines[name]?.warnedAt = now
                logger.warning("lines of the run whose claim was lost are still ending; the batch runs here again once they have", id: name,
                               ["lines": "\(lost.entries.count)", "seconds": "\(Int(now - lost.since))"])
            }
            return
        }
        let claimID = BatchClaimRules.claimID(batch: name)
        var tookOver = false
        let claim = leases.map { BatchRunner.claim(claimID, leases: $0, tookOver: &tookOver) }
        switch BatchClaimRules.intake(claim: claim, leaseSeconds: settings.withLock { $0.leaseSeconds }) {
        case .run:
            break
        case .leave(let wait):
            settling[name] = Date().timeIntervalSince1970 + wait
            logger.debug("batch run by another daemon; looked at again later", id: name)
            // Its start or end is that daemon's now: not listed here as held.
            unstarted.forget(name)
            unpublished.forget(name)
            return
        case .retry(let wait, let reason):
            settling[name] = Date().timeIntervalSince1970 + wait
            logger.warning("cannot claim the batch; looked at again later", id: name, ["reason": LogValue(reason)])
            return
        }
        considerClaimed(name, tookOver: tookOver)
        // Claimed but not run here (gone, not valid yet, not readable this time): let go, so
        // that any daemon may take it. A batch that ended here has left its tombstone.
        if let leases, batches[name] == nil {
            leases.release(claimID, ended: BatchClaimRules.releaseEnds(batchEnded: false))
        }
    }

    static func claim(_ id: String, leases: LeaseManager) -> BatchClaimRules.Claim {
        var tookOver = false
        return claim(id, leases: leases, tookOver: &tookOver)
    }

    /// `tookOver`: the claim was taken from a daemon that is gone.
    static func claim(_ id: String, leases: LeaseManager, tookOver: inout Bool) -> BatchClaimRules.Claim {
        tookOver = false
        // Held in memory is only what this daemon last knew: woken from a pause past its
        // lease (before its keeper has looked), it took a new file of the name that another
        // daemon had begun for its own, started it too, and the other gave it up (130 lines
        // sent twice, on GlusterFS). The lease file says.
        let claim: LeaseManager.Claim
        if leases.holds(id) {
            switch leases.claimState(id) {
            case .mine: claim = .claimed
            case .lost: claim = .heldElsewhere
            // Not proven lost: looked at again, nothing held here forgotten.
            case .unknown, .lapsed: claim = .failed("its lease cannot be confirmed now (unreadable, or its time passed)")
            }
        } else {
            claim = leases.claim(id, tookOver: &tookOver)
        }
        return switch claim {
        case .claimed: .claimed
        case .heldElsewhere: .heldElsewhere
        case .failed(let reason): .failed(reason)
        }
    }

    /// The batch's claim is this daemon's (or the spool is not shared): read it and run it.
    /// `tookOver`: the claim was taken from a daemon that is gone.
    private func considerClaimed(_ name: String, tookOver: Bool) {
        let path = layout.batchRequest(name)
        if let batch = batches[name] {
            // A newer file under the running batch's name: the old batch is cancelled, and
            // the new file starts once it has ended.
            do {
                if let current = try SpoolFiles(layout: layout).identity(of: path), !current.isSameInstance(as: batch.identity) {
                    cancel(name, because: "the input was replaced by a newer file")
                }
            } catch {
                logger.warning("cannot look at the batch's input", id: name, ["reason": "\(error)"])
            }
            return
        }
        let opened: OpenedInput
        switch open(path) {
        case .gone: return
        case .refused(let problem):
            reject(name, problems: [BatchProblem(line: nil, problem)], count: 1, identity: nil)
            return
        case .transient(let reason):
            logger.warning("batch not read this time; it stays in outgoing", id: name, ["reason": LogValue(reason)])
            return
        case .opened(let input):
            opened = input
        }
        let journal = loadJournal(name)
        let partialLength: Int?
        do {
            partialLength = try length(of: layout.batchPartial(name))
        } catch {
            logger.warning("batch not read this time; it stays in outgoing", id: name, ["reason": "\(error)"])
            return
        }
        let limits = settings.withLock { $0.limits }
        // Written on every reading, resumes included: a list left by an older file, or never
        // finished, is replaced by one read from this file.
        let ids = BatchIDListWriter(layout: layout, name: name, logger: logger)
        defer { ids.discard() }
        let validator: BatchValidator
        let identity: FileIdentity
        do {
            let fingerprint: UInt64?
            (validator, fingerprint) = try validate(fd: opened.fd, size: Int(opened.identity.size), path: path, limits: limits, ids: ids)
            // Through a copy: a closure may not capture the noncopyable `opened`.
            let seen = opened.identity
            identity = fingerprint.map { seen.with(contentHash: $0) } ?? seen
            let now = try Syscall.fstat(opened.fd, path: path)
            guard FileIdentity(now).isSameInstance(as: opened.identity) else {
                settle(name, "the batch changed while it was read")
                return
            }
        } catch {
            logger.warning("batch not read this time; it stays in outgoing", id: name, ["reason": "\(error)"])
            return
        }
        // With the fingerprint read in validation: it tells a journal written through another
        // mount, and content changed in place.
        let decision = BatchRecovery.decide(journal: journal, input: identity, partialLength: partialLength)
        // A held end's output lost before it got its name (as `endAgain` judges it on one
        // daemon's spool; a shared spool's held end comes this way): ended as lost, not run
        // again from zero as a cut output would have it. A look that fails leaves the usual
        // path to judge.
        if let journal, unpublished.entries[name]?.detail.outputUnnamed == true, let partial = try? partialLook(name),
           endsLost(name, journal, partial: partial, input: identity) {
            publish(name: name, fd: opened.file, identity: identity, journal: journal, outputPublished: partial == .absent,
                    status: Self.endStatus(journal))
            return
        }
        if case .replaced(let journal) = decision {
            // The new file's list is still a temporary: the old one names the old lines.
            if let doubt = listDoubt(name, journal: journal) {
                logger.warning("a batch journal not vouched for by its list of custom_ids is not ended as the old batch; the new file starts afresh",
                               id: name, ["reason": LogValue(doubt)])
            } else {
                let retrying = unpublished.failures(of: name) > 0
                logger.log(retrying ? .debug : .warning, "the batch's input was replaced while no daemon ran it; the old batch ends first, then the new file starts",
                           id: name, ["committed": "\(journal.committed.count)", "lines": "\(journal.header.lines)"])
                guard endWithoutInput(name, journal: journal, partialLength: partialLength, keepClaim: true) else {
                    // An end whose publication failed is tried after its own pause (`retryHeldBatches`).
                    if unpublished.failures(of: name) == 0 { settle(name, "the replaced batch has not ended yet") }
                    return
                }
            }
        }
        if case .publish(let journal, let published) = decision {
            // Said once: an end whose publication failed comes here again at every try.
            logger.log(unpublished.failures(of: name) == 0 ? .info : .debug, "batch ended before a restart or takeover; publishing it", id: name)
            publish(name: name, fd: opened.file, identity: identity, journal: journal, outputPublished: published,
                    status: Self.endStatus(journal))
            return
        }
        // Started (or refused) from here, not published: an end that failed before and is no
        // longer one to publish (its output taken away, a folder left in its place) is not
        // listed or tried as one.
        unpublished.forget(name)
        guard validator.isValid, let kind = validator.kind else {
            let modified = Double(opened.identity.modifiedNanoseconds) / 1e9
            if modified + settings.withLock({ $0.settleSeconds }) > Date().timeIntervalSince1970 {
                settle(name, "not valid yet; waiting for the writer to finish")
                return
            }
            let first = validator.firstProblem.map { [$0] } ?? []
            reject(name, problems: validator.problems.isEmpty ? first : validator.problems, count: max(1, validator.problemCount),
                   identity: opened.identity)
            return
        }
        do {
            let batch: Batch
            var resumed = false
            if case .resume(let journal) = decision, journal.header.lines == validator.index.count {
                batch = try resume(name, fd: opened.file, identity: identity, index: validator.index, journal: journal)
                resumed = true
                logger.info("batch resumed", id: name, ["lines": "\(validator.index.count)", "committed": "\(journal.committed.count)"])
            } else {
                batch = try begin(name, fd: opened.file, identity: identity, index: validator.index, kind: kind,
                                  endpoint: validator.firstURL ?? "")
                logger.info("batch accepted", id: name, ["lines": "\(validator.index.count)", "kind": LogValue(kind.rawValue)])
            }
            // After the journal: a list is never newer than the journal it goes with.
            ids.keep(for: batch.journal.header)
            batches[name] = batch
            let failures = unstarted.succeeded(name)
            if failures > 0 { logger.info("the batch is started after failed tries", id: name, ["failures": "\(failures)"]) }
            // The batch's earlier runner (a dead daemon, or one stopped cleanly) may have sent
            // lines of it in remote batches of its own: the lane adopts them now that the
            // batch runs here, before its first line is fed (in the next round), so that each
            // such line fed again goes back to its batch instead of being sent again (with
            // locks every claim of a dead daemon is free by now; with lease files the groups'
            // claims expire with its batch's, give or take the moments between renewals, and
            // are adopted by the lane's periodic look). Not earlier: a batch declined (not
            // valid yet, not readable this time) is let go, and a group adopted for it here
            // would never get its lines.
            if BatchClaimRules.adoptsLaneGroups(tookOver: tookOver, resumed: resumed) { adoptLaneGroups() }
        } catch let error as HeldFile.NoRoomToTakeOver {
            // Validated again at every try: not every few seconds while the disk stays full.
            logger.warning("cannot resume the batch until there is room for its copies; it stays in outgoing", id: name,
                           ["reason": LogValue(error.description), "retry_in_seconds": "\(Int(BatchRunner.noRoomRetrySeconds))"])
            settling[name] = Date().timeIntervalSince1970 + BatchRunner.noRoomRetrySeconds
        } catch {
            let now = Date().timeIntervalSince1970
            // Another daemon's doing, not the spool's failing: the batch runs there (tried
            // again all the same, as any start that failed).
            let takenMeanwhile = error is HeldFile.ClaimLostDuringTakeover || error is HeldFile.NameChangedDuringTakeover
            held(&unstarted, name, error, takenMeanwhile ? "the batch's files changed hands while they were copied; it is looked at again"
                                                          : "cannot start the batch; it stays in outgoing and is tried again",
                 level: takenMeanwhile ? .warning : .error) { failures in
                var shown = BatchProgress(name: name, total: validator.index.count, succeeded: 0, failed: 0, inFlight: 0, startedAt: now,
                                          updatedAt: now, cancelled: false)
                shown.startProblem = "\(error)"
                shown.startFailures = failures
                return HeldBatch(progress: shown)
            }
        }
    }

    /// Records a held batch's failure in `retries` (what `status` shows made by `shown` from
    /// the failures in a row) and logs it, the 1st, 2nd, 4th... as an error, and any whose
    /// step or error differs from the last: a system call's failure by its call, path and
    /// errno (the batch's own files have fixed names, their temporaries too), another error
    /// by its text.
    private func held(_ retries: inout BatchRetries<HeldBatch>, _ name: String, _ error: any Error, _ message: String,
                      _ fields: [(String, LogValue)] = [], level: Logger.Level = .error, shown: (Int) -> HeldBatch) {
        let failures = retries.failures(of: name) + 1
        let what = (error as? SystemError).map { "\($0.call) \($0.path ?? "") errno \($0.errno)" } ?? "\(error)"
        let cause = (fields.map { "\($0.0)=\($0.1.text)" } + [what]).joined(separator: " ")
        let loud = retries.failed(name, reason: "\(error)", cause: cause, detail: shown(failures), now: TransferEngine.monotonic())
        logger.log(loud ? level : .debug, message, id: name,
                   fields + [("reason", "\(error)"), ("failures", "\(failures)"),
                             ("retry_in_seconds", "\(BatchCommitRetry.delay(afterFailures: failures))")])
    }

    private func settle(_ name: String, _ reason: String) {
        let wait = max(0.5, settings.withLock { $0.settleSeconds })
        settling[name] = Date().timeIntervalSince1970 + wait
        logger.debug("batch looked at again later", id: name, ["reason": LogValue(reason)])
    }

    private func recheckSettling() {
        let now = Date().timeIntervalSince1970
        for (name, due) in settling where due <= now {
            settling[name] = nil
            consider(name)
        }
    }

    /// A batch's input, open, and what it was when opened.
    struct OpenedInput: ~Copyable {
        var file: FileDescriptor
        let identity: FileIdentity
        var fd: Int32 { file.rawValue }
    }

    enum Opened: ~Copyable {
        case opened(OpenedInput)
        case gone
        case refused(RequestProblem)
        case transient(String)
    }

    /// Postfix's `safe_open`, as `RequestFile.read` does it, but the file is kept open.
    private func open(_ path: String) -> Opened {
        let seen: stat
        do {
            seen = try Syscall.lstat(path)
        } catch let error as SystemError where RequestFile.isGone(error.errno) {
            return .gone
        } catch {
            return .transient("\(error)")
        }
        if let problem = RequestFile.problem(with: seen) { return .refused(problem) }
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        } catch let error as SystemError where RequestFile.isGone(error.errno) {
            return .gone
        } catch {
            return .transient("\(error)")
        }
        do {
            let info = try file.fstat()
            guard info.st_dev == seen.st_dev && info.st_ino == seen.st_ino else {
                return .transient("the batch was replaced while it was being opened")
            }
            if let problem = RequestFile.problem(with: info) {
                return .refused(problem)
            }
            let identity = FileIdentity(info).with(bornNanoseconds: FileIdentity.birthTime(fd: file.rawValue))
            return .opened(OpenedInput(file: file, identity: identity))
        } catch {
            return .transient("\(error)")
        }
    }

    /// Reads the file once, a megabyte at a time, line by line through the validator, and
    /// fingerprints it (nil when the validator stopped before the end).
    private func validate(fd: Int32, size: Int, path: String, limits: BatchValidator.Limits,
                          ids: BatchIDListWriter) throws -> (BatchValidator, UInt64?) {
        var validator = BatchValidator(fileSize: size, limits: limits)
        if validator.stopped { return (validator, nil) }
        var fingerprint = FingerprintStream()
        var pending: [UInt8] = []
        var overLong = false
        var lineStart = 0
        var number = 1
        var position = 0
        func endLine(at end: Int) {
            if overLong || pending.count > limits.maxLineBytes {
                validator.addTooLong(number: number, length: end - lineStart)
            } else {
                let customID = validator.add(pending, number: number, offset: lineStart) { range in
                    BatchRunner.customID(fd: fd, range: range, size: size, path: path)
                }
                if let customID { ids.add(customID) }
            }
            pending.removeAll(keepingCapacity: true)
            overLong = false
            number += 1
            lineStart = end + 1
        }
        while position < size && !validator.stopped {
            if stopRequested.load(ordering: .relaxed) { throw BatchRunner.Interrupted() }
            let chunk = try Syscall.preadAll(fd, count: min(1 << 20, size - position), at: position, path: path)
            if chunk.isEmpty { break }
            fingerprint.add(chunk)
            var cursor = 0
            while cursor < chunk.count && !validator.stopped {
                if let newline = chunk[cursor...].firstIndex(of: 0x0A) {
                    if !overLong { pending += chunk[cursor..<newline] }
                    endLine(at: position + newline)
                    cursor = newline + 1
                } else {
                    if !overLong {
                        pending += chunk[cursor...]
                        if pending.count > limits.maxLineBytes {
                            overLong = true
                            pending = []
                        }
                    }
                    cursor = chunk.count
                }
            }
            position += chunk.count
        }
        if !validator.stopped && (lineStart < size || !pending.isEmpty) { endLine(at: size) }
        return (validator, validator.stopped || position < size ? nil : fingerprint.value)
    }

    /// The `custom_id` of an entry, read again from the file; nil when it cannot be read
    /// (the caller's check then fails safe: a possible duplicate is a distinct id, a line
    /// without its id is written on a later round).
    static func customID(fd: Int32, range: Range<Int>, size: Int, path: String) -> String? {
        do {
            let bytes = try Syscall.preadAll(fd, count: range.count, at: range.lowerBound, path: path)
            return try BatchLine.read(bytes, at: range.lowerBound, fileSize: size).get().customID
        } catch {
            return nil
        }
    }

    /// The custom_ids of `entries` from the batch's list; none when the list cannot be used.
    private func listedCustomIDs(_ batch: Batch, _ entries: Set<Int>) -> [Int: String] {
        let path = layout.batchIDList(batch.name)
        var lookup = BatchIDList.Lookup(header: batch.journal.header, entries: entries,
                                        maxLineBytes: settings.withLock { $0.limits.maxLineBytes })
        do {
            let list = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
            var position = 0
            while true {
                let chunk = try Syscall.preadAll(list.rawValue, count: 1 << 20, at: position, path: path)
                if chunk.isEmpty { break }
                lookup.add(chunk)
                position += chunk.count
            }
        } catch {
            logger.warning("cannot read the batch's list of custom_ids", id: batch.name, ["reason": "\(error)", "lines": "\(entries.count)"])
            return [:]
        }
        switch lookup.finish() {
        case .success(let found):
            return found
        case .failure(let problem):
            logger.warning("the batch's list of custom_ids cannot be used", id: batch.name, ["reason": LogValue(problem.description)])
            return [:]
        }
    }

    /// The size of the file at `path` as opened now, nil when there is none: an `lstat`
    /// through a network mount can give a size its attribute cache kept, and an output
    /// seen shorter than its journal runs the batch again (`BatchRecovery`); an open
    /// revalidates them (close-to-open).
    private func length(of path: String) throws -> Int? {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch let error as SystemError where error.errno == ENOENT {
            return nil
        }
        return Int(try file.fstat().st_size)
    }

    /// Whether `name`'s held end is ended as lost now: its output never got its name, the
    /// `.partial` is gone, foreign or cut (`HeldEndOutput`), every line is committed, the
    /// input is still the journal's or gone, and the end is this daemon's to judge.
    private func endsLost(_ name: String, _ journal: BatchJournal, partial: HeldEndOutput.Partial, input: FileIdentity?) -> Bool {
        unpublished.entries[name]?.detail.outputUnnamed == true
            && HeldEndOutput.isLost(outputUnnamed: true, partial: partial, committedLength: journal.outputLength)
            && journal.committed.count >= journal.header.lines
            && (input.map { BatchRecovery.journalNames($0, recorded: journal.header.input) } ?? true)
            && claimStillMine(name)
    }

    /// What is at the batch's `.partial` name, by an open as `length(of:)` looks (a cached
    /// size could be taken for an output cut); a link is not followed but named `other`.
    private func partialLook(_ name: String) throws -> HeldEndOutput.Partial {
        let path = layout.batchPartial(name)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch let error as SystemError where error.errno == ENOENT {
            return .absent
        } catch let error as SystemError where error.errno == ELOOP {
            return .other
        }
        let info = try file.fstat()
        return info.st_mode & S_IFMT == S_IFREG ? .regular(size: Int(info.st_size)) : .other
    }

    private func loadJournal(_ name: String) -> BatchJournal? {
        let path = layout.batchJournal(name)
        do {
            guard try Syscall.exists(path) else { return nil }
            return BatchJournal.replay(try FileReader.prefix(path: path, limit: 1 << 30))
        } catch {
            // Said with the start's first failure, not at each try after it.
            logger.log(unstarted.failures(of: name) == 0 ? .warning : .debug, "cannot read the batch's journal; the batch starts from zero", id: name,
                       ["reason": "\(error)"])
            return nil
        }
    }

    /// A fresh start: the journal's header durable, an empty output, then the lines go.
    private func begin(_ name: String, fd: consuming FileDescriptor, identity: FileIdentity, index: BatchIndex, kind: BatchKind, endpoint: String) throws -> Batch {
        try SpoolFiles(layout: layout).ensureFolder(layout.batches)
        let header = BatchJournal.Header(kind: kind, lines: index.count, createdAt: Int(Date().timeIntervalSince1970), input: identity,
                                         endpoint: endpoint)
        let partial = layout.batchPartial(name)
        // Readable: an output whose name is taken while the batch runs is copied back (`keepOutputNamed`).
        // A new file, never an old one truncated: a daemon paused past its lease may still
        // hold an earlier output open (as `resume` takes over its files).
        let outputFD = try FileDescriptor.createNew(partial, O_RDWR | O_APPEND | O_NOFOLLOW, mode: layout.fileMode)
        do {
            try outputFD.fsync()
            try Syscall.fsyncDirectory(layout.incoming)
            try DurableFile.write(BatchJournal.encode(header), to: layout.batchJournal(name), mode: layout.fileMode)
        } catch {
            // The empty output just made goes with the start that failed: a batch never
            // started (its input then removed) would leave it in `incoming` for good.
            logger.bestEffort("removing the output of a start that failed", id: name) { _ = try Syscall.unlinkIfPresent(partial) }
            throw error
        }
        // Readable too: a journal whose name is taken while the batch runs is copied back (`keepJournalNamed`).
        let journalFD = try FileDescriptor.open(layout.batchJournal(name), O_RDWR | O_APPEND | O_NOFOLLOW)
        return Batch(name: name, inputPath: layout.batchRequest(name), fd: fd, identity: identity, index: index,
                     journal: BatchJournal(header: header), journalFD: journalFD, outputFD: outputFD)
    }

    /// A restart: the output cut back to what the journal committed, the journal to its
    /// last whole record, and only the lines not in it go.
    private func resume(_ name: String, fd: consuming FileDescriptor, identity: FileIdentity, index: BatchIndex, journal: BatchJournal) throws -> Batch {
        let partial = layout.batchPartial(name)
        let journalPath = layout.batchJournal(name)
        if leases != nil {
            let journalFD = try takeOverJournal(name, journal, outputLength: journal.outputLength)
            let outputFD = try takeOverOutput(name, length: journal.outputLength)
            return Batch(name: name, inputPath: layout.batchRequest(name), fd: fd, identity: identity, index: index,
                         journal: journal, journalFD: journalFD, outputFD: outputFD)
        }
        let outputFD = try FileDescriptor.open(partial, O_RDWR | O_APPEND | O_NOFOLLOW)
        try Syscall.ftruncate(outputFD.rawValue, length: journal.outputLength, path: partial)
        try outputFD.fsync()
        let journalFD = try FileDescriptor.open(journalPath, O_RDWR | O_APPEND | O_NOFOLLOW)
        try Syscall.ftruncate(journalFD.rawValue, length: journal.validLength, path: journalPath)
        return Batch(name: name, inputPath: layout.batchRequest(name), fd: fd, identity: identity, index: index,
                     journal: journal, journalFD: journalFD, outputFD: outputFD)
    }

    /// The batch's journal and output as a daemon taking its claim over makes them its own
    /// (`takeOverJournal`, then `takeOverOutput`).
    /// The daemon it was taken from may only be paused past its lease, its output and
    /// journal still open: cut back in place, they would take its next commit after the lines
    /// written here (a line twice in the output). Copies of what the journal committed take
    /// their names instead (`HeldFile.takeOver`), the journal first: a crash between the two
    /// leaves a journal whose output holds all it committed. Every resume on a shared spool
    /// goes this way, not only a takeover: a takeover that fails halfway lets the claim go
    /// as free, and the next daemon to claim it could not tell (nor can a lock lost on a
    /// network filesystem). Costs a read and a write of the output, once per resume. Room
    /// for both copies and `min_free_bytes` more is asked before the first is made.
    ///
    /// This is the journal's copy; `outputLength`, the output's bytes to copy after it, is
    /// asked room for now, before anything is written.
    private func takeOverJournal(_ name: String, _ journal: BatchJournal, outputLength: Int) throws -> FileDescriptor {
        let (reserve, overflow) = UInt64(max(0, outputLength)).addingReportingOverflow(settings.withLock { $0.minFreeBytes })
        let stillMine = { [self] in
            let mine = claimStillMine(name)
            if mine { BatchTestStop.at("takeover", batch: name, logger: logger) }
            return mine
        }
        let file = try HeldFile.takeOver(layout.batchJournal(name), length: journal.validLength, reserve: overflow ? .max : reserve,
                                         flags: O_RDWR | O_APPEND, mode: layout.fileMode, stillMine: stillMine,
                                         provenLost: { claimLapsedOrLost(name) }, logger: logger, interrupt: interruptIfStopping)
        try Syscall.fsyncDirectory(layout.batches)
        return file
    }

    /// The output's copy, of its first `length` bytes (after `takeOverJournal`).
    private func takeOverOutput(_ name: String, length: Int) throws -> FileDescriptor {
        let file = try HeldFile.takeOver(layout.batchPartial(name), length: length, reserve: settings.withLock { $0.minFreeBytes },
                                         flags: O_RDWR | O_APPEND, mode: layout.fileMode, stillMine: { claimStillMine(name) },
                                         provenLost: { claimLapsedOrLost(name) }, logger: logger, interrupt: interruptIfStopping)
        try Syscall.fsyncDirectory(layout.incoming)
        logger.info("the batch's journal and output copied as this daemon's own", id: name, ["output_bytes": "\(length)"])
        return file
    }

    /// Whether the batch's claim is still this daemon's: on one daemon's spool always; on a
    /// shared one while the lease names this daemon and was never let lapse
    /// (`LeaseManager.stillMine`), so that no other daemon can have taken the batch, or its
    /// held end, over meanwhile.
    private func claimStillMine(_ name: String) -> Bool {
        leases?.stillMine(BatchClaimRules.claimID(batch: name)) ?? true
    }

    /// A takeover's copy renamed over the name is taken back on this too: the lease that
    /// lapsed during a pause may have let the first owner go on under the old file's name,
    /// whose live file the copy has just replaced (a lease that cannot be read proves nothing).
    private func claimLapsedOrLost(_ name: String) -> Bool {
        let state = leases?.claimState(BatchClaimRules.claimID(batch: name))
        return state == .lost || state == .lapsed
    }

    /// Whether the batch's claim is proven another daemon's (or gone), not merely unreadable.
    private func claimProvenLost(_ name: String) -> Bool {
        leases?.claimState(BatchClaimRules.claimID(batch: name)) == .lost
    }

    /// A stop does not wait for a long copy: the claim is let go, and the batch is taken
    /// over again later, here or elsewhere.
    private func interruptIfStopping() throws {
        if stopRequested.load(ordering: .relaxed) { throw BatchRunner.Interrupted() }
    }

    /// Journals whose input left while no daemon ran them (this one was down, or their owner
    /// died before the input was deleted): those batches end as cancelled with the lines
    /// they had committed. At start, then on every sweep (`BatchOrphanRules`).
    private func recoverOrphans() {
        orphanSweepDue = Date().timeIntervalSince1970
            + BatchOrphanRules.sweepSeconds(leaseSeconds: settings.withLock { $0.leaseSeconds }, shared: leases != nil)
        let names: [String]
        do {
            names = try Syscall.exists(layout.batches) ? try Syscall.listDirectory(layout.batches) : []
        } catch {
            logger.warning("cannot list the batch journals", ["reason": "\(error)"])
            return
        }
        removeLeftoverIDLists(names)
        if Date().timeIntervalSince1970 >= heldCopySweepDue {
            heldCopySweepDue = Date().timeIntervalSince1970 + SpoolLayout.heldCopyLeftoverSeconds
            let removed = HeldCopyLeftovers(layout: layout, logger: logger).remove()
            if removed > 0 { logger.info("removed copies left by a crash", ["files": "\(removed)"]) }
        }
        var strays = Set<String>()
        for file in names where file.hasSuffix(SpoolLayout.batchJournalSuffix) && !file.hasPrefix(SpoolLayout.hiddenPrefix) {
            let name = String(file.dropLast(SpoolLayout.batchJournalSuffix.count))
            guard Syscall.isRegularFile(layout.batchJournal(name)) || batches[name] != nil else {
                // A folder (or a link, a FIFO) at a journal's name holds no batch: said once
                // while it stays, not at every sweep as a batch that "starts from zero".
                strays.insert(name)
                if !strayJournals.contains(name) {
                    logger.warning("something other than a file is at a batch journal's name; it is left as it is", id: name,
                                   ["path": LogValue(layout.batchJournal(name))])
                }
                continue
            }
            endIfOrphan(name)
        }
        strayJournals = strays
    }

    /// Ends the batch of the journal `name` if its input has left and no daemon runs it.
    private func endIfOrphan(_ name: String) {
        let inputPresent = Syscall.isPresent(layout.batchRequest(name))
        let runningHere = batches[name] != nil
        // Another daemon may be ending this batch right now: its claim says.
        let claim = BatchOrphanRules.needsClaim(inputPresent: inputPresent, runningHere: runningHere, shared: leases != nil)
            ? leases.map { BatchRunner.claim(BatchClaimRules.claimID(batch: name), leases: $0) } : nil
        guard BatchOrphanRules.action(inputPresent: inputPresent, runningHere: runningHere, claim: claim) == .end else {
            if case .claimed? = claim { leases?.release(BatchClaimRules.claimID(batch: name), ended: false) }
            if case .heldElsewhere? = claim { unpublished.forget(name) }
            return
        }
        recoverOrphan(name)
        // Published (a tombstone) or left for the next start: either way no longer held for running.
        leases?.release(BatchClaimRules.claimID(batch: name), ended: BatchClaimRules.releaseEnds(batchEnded: false))
    }

    /// Batches whose end could not be published, looked at again once their pause is over:
    /// through the input, as a restart does, or as an orphan when the input has left. Before,
    /// only the next start or the sweep of a minute did, and `status` did not list them.
    /// Batches whose start failed likewise (before: tried, and logged twice, every 2 s).
    private func retryHeldBatches() {
        if !unstarted.isEmpty {
            for name in unstarted.due(now: TransferEngine.monotonic()) where batches[name] == nil {
                guard Syscall.isPresent(layout.batchRequest(name)) else {
                    unstarted.forget(name)
                    continue
                }
                // Apart: `consider` changes the held batches, which must not be under access meanwhile.
                let next = nextLook { consider(name) }
                unstarted.holdBack(name, until: next)
            }
        }
        guard !unpublished.isEmpty else { return }
        for name in unpublished.due(now: TransferEngine.monotonic()) where batches[name] == nil {
            // One daemon's spool: nothing but this daemon ends the batch, and it is ended
            // from the journal it had. A shared one goes through the claim, as a start does.
            if leases == nil, let journal = unpublished.entries[name]?.detail.journal {
                endAgain(name, journal)
                continue
            }
            guard Syscall.isRegularFile(layout.batchJournal(name)) else {
                // Ended by another daemon, or its journal removed or replaced by hand: nothing
                // left to publish here.
                unpublished.forget(name)
                continue
            }
            let next = nextLook {
                if Syscall.isPresent(layout.batchRequest(name)) { consider(name) } else { endIfOrphan(name) }
            }
            unpublished.holdBack(name, until: next)
        }
    }

    /// Runs `look` (which may change the held batches) and says when the next may come at
    /// the earliest: four times as long as this one took after it. A look reads and validates
    /// the whole input again, and a large batch held for long must not keep the batch thread
    /// (and every other batch's commits) busy most of the time.
    private func nextLook(_ look: () -> Void) -> Double {
        let began = TransferEngine.monotonic()
        look()
        let now = TransferEngine.monotonic()
        return now + 4 * (now - began)
    }

    /// A held end tried again from its journal in memory: the input is neither read nor
    /// validated again (a large one cost the batch thread its time at every try), and the end
    /// is still published if the journal's file was removed meanwhile (before, the end was
    /// dropped and the next sweep sent every line again). The input replaced or the output
    /// cut back since: the whole path, as at a start, decides.
    private func endAgain(_ name: String, _ journal: BatchJournal) {
        let input: FileIdentity?
        let partial: HeldEndOutput.Partial
        do {
            input = try SpoolFiles(layout: layout).identity(of: layout.batchRequest(name))
            partial = try partialLook(name)
        } catch {
            // Counted and shown as any failure of the end: a look that keeps failing (a
            // link at the `.partial`'s name) must not leave `status` with an old reason.
            let detail = unpublished.entries[name]?.detail
            held(&unpublished, name, error, "cannot look at the batch's files; its end is tried again") { failures in
                var shown = detail ?? HeldBatch(progress: BatchProgress(name: name, total: journal.header.lines, succeeded: journal.counts.succeeded,
                                                                        failed: journal.counts.notSucceeded, inFlight: 0,
                                                                        startedAt: Double(journal.header.createdAt),
                                                                        updatedAt: Date().timeIntervalSince1970, cancelled: false))
                shown.progress.publishProblem = "\(error)"
                shown.progress.publishFailures = failures
                return shown
            }
            return
        }
        // Its output lost (gone, cut, replaced) before it got its name, the input still the
        // batch's or gone: ended as lost, not started again from zero as a cut output would
        // have it (`publish` judges it again and writes the summary that says so).
        if endsLost(name, journal, partial: partial, input: input) {
            publish(name: name, fd: nil, identity: journal.header.input, journal: journal, outputPublished: partial == .absent,
                    status: Self.endStatus(journal))
            return
        }
        // A link or FIFO at the name is not the daemon's: its output already has its name
        // (else the end was judged lost above).
        let partialLength: Int? = if case .regular(let size) = partial { size } else { nil }
        guard case .publish(let journal, let published) = BatchRecovery.decide(journal: journal, input: input, partialLength: partialLength) else {
            // The entry stays: a replaced input's old end is published there and its failures
            // counted on; a start afresh forgets it (`consider`).
            if input != nil { consider(name) } else { endIfOrphan(name) }
            return
        }
        publish(name: name, fd: nil, identity: journal.header.input, journal: journal, outputPublished: published, status: Self.endStatus(journal))
    }

    /// How a batch whose journal says every line ended ended: cancelled or expired when a
    /// line did, else completed.
    static func endStatus(_ journal: BatchJournal) -> BatchSummary.Status {
        journal.counts.cancelled > 0 ? .cancelled : journal.counts.expired > 0 ? .expired : .completed
    }

    /// Lists of custom_ids (and their unfinished temporaries) of no batch: neither a journal
    /// nor an input under their name. A list goes before its journal at the end, so only a
    /// crash while one was written (or a removal by hand) leaves one.
    private func removeLeftoverIDLists(_ names: [String]) {
        for file in names {
            guard let name = BatchIDList.batchName(ofFile: file), !Syscall.isPresent(layout.batchJournal(name)),
                  !Syscall.isPresent(layout.batchRequest(name)) else { continue }
            logger.debug("removing a list of custom_ids that no batch has", id: name)
            logger.bestEffort("removing a leftover list of custom_ids", id: name) {
                try Syscall.unlinkIfPresent(layout.batches + "/" + file)
            }
        }
    }

    /// A journal whose input left: its batch is published, cancelled, with every line in
    /// its output (those never committed named from its list of custom_ids).
    private func recoverOrphan(_ name: String) {
        guard let journal = loadJournal(name) else { return }
        let partialLength: Int?
        do {
            partialLength = try length(of: layout.batchPartial(name))
        } catch {
            logger.warning("cannot look at a batch's output; looked at again on the next start", id: name, ["reason": "\(error)"])
            return
        }
        endWithoutInput(name, journal: journal, partialLength: partialLength, keepClaim: false)
    }

    /// Why the batch's list of custom_ids does not vouch for `journal` (nil when it ends
    /// with the trailer of the journal's input). A journal copied from another batch, or
    /// restored without its list, names lines this name never had: it is not published.
    private func listDoubt(_ name: String, journal: BatchJournal) -> String? {
        let path = layout.batchIDList(name)
        do {
            let list = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
            let size = Int(try list.fstat().st_size)
            let want = BatchIDList.trailer(for: journal.header).count
            let tail = try Syscall.preadAll(list.rawValue, count: min(size, want), at: max(0, size - want), path: path)
            return BatchIDList.ends(tail[...], for: journal.header) ? nil : "its list of custom_ids was written for another input"
        } catch let error as SystemError where error.errno == ENOENT {
            return "it has no list of custom_ids"
        } catch {
            return "its list of custom_ids cannot be read: \(error)"
        }
    }

    /// Ends the journal's batch as if its input had left: published when every line was
    /// committed, else cancelled. `keepClaim` when a new file under the name starts next
    /// under the same claim (a tombstone would leave it to nobody). Whether it ended.
    @discardableResult
    private func endWithoutInput(_ name: String, journal: BatchJournal, partialLength: Int?, keepClaim: Bool) -> Bool {
        switch BatchRecovery.decide(journal: journal, input: nil, partialLength: partialLength) {
        case .publish(let journal, let published):
            return publish(name: name, fd: nil, identity: journal.header.input, journal: journal, outputPublished: published,
                           status: Self.endStatus(journal),
                           releaseClaim: !keepClaim)
        case .cancelled(let journal):
            if leases != nil {
                // Its runner may only be paused past its lease (see `takeOverJournal`); the
                // cancelled lines are written to copies of this daemon's own: of the output
                // cut back to what was committed, or of all it has when that is less (lost
                // writes, a cut by hand), as a local spool goes on with it.
                do {
                    let length = partialLength.map { min($0, journal.outputLength) }
                    _ = try takeOverJournal(name, journal, outputLength: length ?? 0)
                    if let length { _ = try takeOverOutput(name, length: length) }
                } catch {
                    logger.error("cannot take over the output of a batch whose input left; it is ended on a later sweep", id: name,
                                 ["reason": "\(error)"])
                    return false
                }
            } else if let partialLength, partialLength > journal.outputLength {
                logger.bestEffort("cutting the output back to its committed length") {
                    let output = try FileDescriptor.open(layout.batchPartial(name), O_WRONLY | O_NOFOLLOW)
                    try Syscall.ftruncate(output.rawValue, length: journal.outputLength, path: layout.batchPartial(name))
                }
            }
            if partialLength == nil {
                // A new file: an empty output, on a shared spool as on a local one.
                logger.bestEffort("creating the output") { try DurableFile.write([], to: layout.batchPartial(name), mode: layout.fileMode) }
            }
            let claimID = BatchClaimRules.claimID(batch: name)
            let ended: BatchJournal
            switch BatchOrphanCanceller(layout: layout, logger: logger, maxLineBytes: settings.withLock { $0.limits.maxLineBytes }).fill(name, journal: journal, stillMine: { leases?.stillMine(claimID) ?? true }) {
            case .filled(let filled):
                logger.warning("a batch's input left while no daemon ran it; it ends cancelled, its lines never sent named in its output as cancelled",
                               id: name, ["committed_before": "\(journal.committed.count)", "lines": "\(journal.header.lines)"])
                ended = filled
            case .committedOnly(let journal, let reason):
                logger.warning("a batch's input left while no daemon ran it; it ends cancelled with the lines it had", id: name,
                               ["reason": LogValue(reason), "committed": "\(journal.committed.count)", "lines": "\(journal.header.lines)"])
                ended = journal
            case .failed(_, let reason):
                logger.error("cannot write the cancelled lines of a batch whose input left; it is ended on a later sweep", id: name,
                             ["reason": LogValue(reason)])
                return false
            case .lost:
                logger.warning("the claim of a batch being ended was lost to another daemon; it ends there", id: name)
                return false
            }
            // The identity it was read under: a new file dropped under the name meanwhile stays.
            return publish(name: name, fd: nil, identity: journal.header.input, journal: ended, outputPublished: false, status: .cancelled,
                           releaseClaim: !keepClaim)
        case .fresh, .resume, .replaced:
            // Not asked without an input.
            return false
        }
    }

    // MARK: running

    /// The feed stops for the lane's backlog and comes back soon, not when a line ends.
    private func waitForLane(_ batch: Batch, _ backlog: Int) {
        feedWaitsForLane = true
        guard !batch.waitedForLane else { return }
        batch.waitedForLane = true
        logger.debug("the batch's lines that may wait are fed as the background lane takes them in", id: batch.name,
                     ["lane_backlog": "\(backlog)", "fed": "\(batch.next)"])
    }

    private func feed(_ batch: Batch) {
        guard !batch.cancelled, !batch.abandoned, !draining else { return }
        let (window, lifetime, maxAttempts, routing, backgroundWindow, backlogLimit) = settings.withLock {
            ($0.window, $0.maxLifetimeSeconds, $0.maxAttempts, $0.routing, $0.backgroundWindow, $0.laneBacklogLimit)
        }
        let rule = BatchLineFeed(liveWindow: window, backgroundWindow: backgroundWindow, laneBacklogLimit: backlogLimit)
        // Counted on as lines are fed: they reach the lane's inbox after this round.
        var backlog = laneBacklog()
        let created = Date(timeIntervalSince1970: Double(batch.journal.header.createdAt))
        if Date().timeIntervalSince(created) > lifetime {
            batch.expiring = true
            cancel(batch.name, because: "max_lifetime_seconds (\(Int(lifetime))) passed since the batch was accepted")
            return
        }
        let size = Int(batch.identity.size)
        var fed = 0
        // Asked once a round, and only when a line is fed: the lane's registry is locked
        // while it looks at `state/remote`.
        var carriedElsewhere: Bool?
        while batch.next < batch.index.count {
            if fed >= Self.feedChunk {
                wake.signal()
                break
            }
            let entry = batch.next
            if batch.journal.committed.contains(entry) {
                batch.next += 1
                continue
            }
            let task: TaskDescriptor
            if let peeked = batch.peeked, peeked.entry == entry {
                task = peeked.task
            } else {
                // Neither lane can take a line: nothing is read.
                let live = batch.inWindow.count - batch.laned.count
                guard rule.admits(.live, live: live, background: batch.laned.count)
                    || rule.admits(.background, live: live, background: batch.laned.count, laneBacklog: backlog) else {
                    if rule.waitsForLane(.background, background: batch.laned.count, laneBacklog: backlog) { waitForLane(batch, backlog) }
                    break
                }
                let range = batch.index.range(entry)
                let line: BatchLine
                do {
                    let bytes = try Syscall.preadAll(batch.fd, count: range.count, at: range.lowerBound, path: batch.inputPath)
                    line = try BatchLine.read(bytes, at: range.lowerBound, fileSize: size).get()
                } catch {
                    batch.next += 1
                    batch.inWindow.insert(entry)
                    batch.ended.append(Ended(entry: entry, customID: nil,
                                             result: .failed(code: "invalid-request", message: "the line cannot be read again: \(error)", status: nil, body: nil),
                                             usage: nil))
                    continue
                }
                // A line retried before a restart goes on with the attempts it has left.
                let history = batch.journal.attempts[entry].map { $0.history(firstSeen: created, maxAttempts: maxAttempts) }
                    ?? TaskHistory(firstSeen: created)
                var made = TaskDescriptor(id: SpoolLayout.lineID(batch: batch.name, entry: entry), requestPath: batch.inputPath,
                                          summary: line.summary, identity: batch.identity, history: history)
                made.line = range
                task = made
            }
            // A line a group not followed here may carry waits for that group in the lane,
            // whatever its route: sent live, it would be paid twice.
            if carriedElsewhere == nil { carriedElsewhere = laneGroupElsewhere(batch.name) }
            let toGroup = RemoteGroupClaims.lineFed(firstAttempt: task.history.attempts.isEmpty,
                                                    batchInGroupNotFollowedHere: carriedElsewhere ?? false)
            let lane = BatchLineFeed.lane(of: routing.route(task), fed: toGroup)
            guard rule.admits(lane, live: batch.inWindow.count - batch.laned.count, background: batch.laned.count, laneBacklog: backlog) else {
                if rule.waitsForLane(lane, background: batch.laned.count, laneBacklog: backlog) { waitForLane(batch, backlog) }
                batch.peeked = (entry, task)
                break
            }
            batch.peeked = nil
            batch.next += 1
            batch.inWindow.insert(entry)
            if lane == .background {
                batch.laned.insert(entry)
                backlog += 1
            }
            fed += 1
            // Handed to the lane, not started, whatever the scheduler's routing says (its
            // `laneResumed`); the lane holds it aside until the group is adopted.
            if toGroup == .toItsGroup { post(.laneResumed(ids: [task.id])) }
            post(.arrived(.valid(task)))
        }
        // Not while its commit waits out a failure: the round's own timeout comes back for
        // it, and a wake each round spun the thread at a full core for as long as it lasted.
        if !batch.ended.isEmpty && batch.commitRetry.mayTry(now: TransferEngine.monotonic()) { wake.signal() }
    }

    /// The input held open changed in place since it was validated (cut short, appended to,
    /// rewritten): it is no longer the batch accepted, which is cancelled as for a newer file.
    /// Looked at before each commit, not left to the watcher: the engine refuses every line
    /// of a changed file at once, and those refusals, committed first, would run the whole
    /// batch down as failed lines instead of cancelling it.
    private func noticeChangeInPlace(_ batch: Batch) {
        guard !batch.cancelled, !batch.abandoned, batch.fd >= 0 else { return }
        let now: FileIdentity
        do {
            now = FileIdentity(try Syscall.fstat(batch.fd, path: batch.inputPath))
        } catch {
            logger.warning("cannot look at the batch's input", id: batch.name, ["reason": "\(error)"])
            return
        }
        if !now.isSameInstance(as: batch.identity) { cancel(batch.name, because: "the input was changed in place since it was validated") }
    }

    /// The batch's claim is another daemon's now: its lines in flight here are stopped and
    /// nothing more is written. The new holder resumes from the journal, which holds only
    /// what was committed while the claim was this daemon's.
    private func abandon(_ batch: Batch) {
        guard !batch.abandoned else { return }
        batch.abandoned = true
        batch.cancelled = true
        logger.warning("the batch's claim was lost to another daemon; it goes on there from its journal", id: batch.name,
                       ["lines_in_flight": "\(batch.inWindow.count)"])
        batches[batch.name] = nil
        // Before the withdrawals, which its inbox then brings after: the lane lets the groups
        // of the batch's lines go to the batch's next runner (`RemoteGroupClaims.afterBatchLost`).
        laneBatchLost(batch.name)
        // Each line in flight whose end is not here yet is reported once its withdrawal ends
        // it; until then the batch does not run here again (`BatchClaimRules.mayRunAgain`).
        var outstanding = batch.inWindow
        for ended in batch.ended { outstanding.remove(ended.entry) }
        for attempted in batch.attempted { outstanding.remove(attempted.entry) }
        let now = Date().timeIntervalSince1970
        if !outstanding.isEmpty { abandonedLines[batch.name] = (outstanding, now, now) }
        for entry in batch.inWindow { post(.requestRemoved(id: SpoolLayout.lineID(batch: batch.name, entry: entry))) }
        for attempted in batch.attempted { post(.finalized(id: attempted.task.id)) }
        batch.attempted.removeAll()
        batch.ended.removeAll()
        close(batch)
        leases?.release(BatchClaimRules.claimID(batch: batch.name), ended: false)
    }

    /// A line of a run whose claim was lost here was reported ended (or handed back).
    private func abandonedLineReported(_ name: String, _ entry: Int) {
        guard abandonedLines[name]?.entries.remove(entry) != nil, abandonedLines[name]?.entries.isEmpty == true else { return }
        abandonedLines[name] = nil
    }

    private func cancel(_ name: String, because reason: String) {
        settling[name] = nil
        guard let batch = batches[name], !batch.cancelled else { return }
        batch.cancelled = true
        stopping.withLock { _ = $0.insert(name) }
        logger.info("batch cancelled: \(reason)", id: name, ["lines_in_flight": "\(batch.inWindow.count)"])
        for entry in batch.inWindow { post(.requestRemoved(id: SpoolLayout.lineID(batch: name, entry: entry))) }
    }

    /// Appends the output lines of every line that ended, fsyncs the output, then appends
    /// their journal entries, and the attempts of the lines retried, and fsyncs the
    /// journal: the lines are committed together.
    private func commit(_ batch: Batch) {
        // A stopping daemon tries once more whatever the pause: lines not committed now are
        // sent again (and paid again) after the restart.
        guard !batch.abandoned, !batch.ended.isEmpty || !batch.attempted.isEmpty,
              draining || batch.commitRetry.mayTry(now: TransferEngine.monotonic()) else { return }
        let size = Int(batch.identity.size)
        var output: [UInt8] = []
        var entries: [BatchJournal.Entry] = []
        // The usage of the lines committed here, counted once they are durable.
        var usages: [(counts: [String: Int], lane: Metrics.Lane, endpoint: String?)] = []
        var seen = Set<Int>()
        let fresh = batch.ended.filter { !batch.journal.committed.contains($0.entry) && seen.insert($0.entry).inserted }
        var customIDs: [Int: String] = [:]
        var unreadable = Set<Int>()
        for ended in fresh where ended.customID == nil {
            if let customID = BatchRunner.customID(fd: batch.fd, range: batch.index.range(ended.entry), size: size, path: batch.inputPath) {
                customIDs[ended.entry] = customID
            } else {
                unreadable.insert(ended.entry)
            }
        }
        // The input cut short (or rewritten) in place since it was validated no longer holds
        // these lines at their offsets; skipping them would leave a cancelled batch waiting
        // for them for good.
        if !unreadable.isEmpty { customIDs.merge(listedCustomIDs(batch, unreadable)) { read, _ in read } }
        var unnamed = Set<Int>()
        for ended in fresh {
            var result = ended.result
            if batch.cancelled, case .failed = result, ended.customID == nil { result = .cancelled }
            if batch.expiring, result == .cancelled { result = .expired }
            guard let customID = ended.customID ?? customIDs[ended.entry] else {
                unnamed.insert(ended.entry)
                continue
            }
            output += BatchOutputLine.encode(kind: batch.journal.header.kind, batch: batch.name, entry: ended.entry, customID: customID, result: result)
            let tokens = BatchCounts.tokens(of: ended.usage)
            if let usage = ended.usage { usages.append((usage, ended.lane, ended.endpoint)) }
            entries.append(BatchJournal.Entry(entry: ended.entry, code: result.journalCode, outputEnd: batch.journal.outputLength + output.count,
                                              inputTokens: tokens.input, outputTokens: tokens.output))
        }
        var records = entries.flatMap(BatchJournal.encode)
        for attempted in batch.attempted where !seen.contains(attempted.entry) {
            records += BatchLineAttempts.encode(entry: attempted.entry, attempted.attempts)
        }
        // Asked just before the writes, not before the lines' ids are read and the output
        // encoded: with lease files nothing fences a daemon paused past its lease between
        // this look and its writes, and a taker would then find lines written twice.
        if BatchClaimRules.commit(stillMine: leases.map { $0.stillMine(BatchClaimRules.claimID(batch: batch.name)) }) == .abandon {
            abandon(batch)
            return
        }
        BatchTestStop.at("commit", batch: batch.name, logger: logger)
        // Where the journal ended before this group: a write cut short (a full disk) is cut
        // back to it, or the records appended after the torn one once there is room again
        // are never read (recovery stops at the tear), and their lines are sent again.
        var journalEnd: Int?
        do {
            if !output.isEmpty {
                try keepOutputNamed(batch)
                try Syscall.writeAll(batch.outputFD, output, path: layout.batchPartial(batch.name))
                try Syscall.fdatasync(batch.outputFD, path: layout.batchPartial(batch.name))
            }
            if !records.isEmpty {
                try keepJournalNamed(batch)
                journalEnd = Int(try Syscall.fstat(batch.journalFD, path: layout.batchJournal(batch.name)).st_size)
                try Syscall.writeAll(batch.journalFD, records, path: layout.batchJournal(batch.name))
                try Syscall.fdatasync(batch.journalFD, path: layout.batchJournal(batch.name))
            }
        } catch is OutputTakenOver {
            abandon(batch)
            return
        } catch {
            // Nothing of this group counts: the output is cut back, and the group is written
            // again after a pause (`BatchCommitRetry`), the batch thread free meanwhile.
            commitFailed(batch, error, "cannot commit the batch's lines; they wait in memory and are tried again", [("lines", "\(entries.count)")])
            logger.bestEffort("cutting the output back") {
                try Syscall.ftruncate(batch.outputFD, length: batch.journal.outputLength, path: layout.batchPartial(batch.name))
            }
            if let journalEnd {
                logger.bestEffort("cutting the journal back") {
                    try Syscall.ftruncate(batch.journalFD, length: journalEnd, path: layout.batchJournal(batch.name))
                }
            }
            return
        }
        let failures = batch.commitRetry.succeeded()
        if failures > 0 {
            logger.info("the batch's lines are committed again", id: batch.name, ["failures": "\(failures)", "lines": "\(entries.count)"])
        }
        for attempted in batch.attempted {
            batch.journal.apply(entry: attempted.entry, attempted.attempts)
            answer(attempted, durable: true)
        }
        batch.attempted.removeAll(keepingCapacity: true)
        for entry in entries {
            batch.journal.apply(entry)
            metrics.batchLines(BatchRunner.outcomeName(entry.code))
        }
        if !unnamed.isEmpty {
            logger.warning("lines whose custom_id neither the input nor the batch's list holds any more are left out of its output",
                           id: batch.name, ["lines": "\(unnamed.count)"])
            batch.unnamed.formUnion(unnamed)
        }
        // Per lane, as a request's usage is counted once its outcome is committed.
        for usage in usages { metrics.usage(usage.counts, lane: usage.lane, endpoint: usage.endpoint) }
        for ended in batch.ended {
            batch.inWindow.remove(ended.entry)
            batch.laned.remove(ended.entry)
        }
        batch.ended.removeAll(keepingCapacity: true)
    }

    /// Records a failed commit or publication for its pause (`BatchCommitRetry`), logged as
    /// an error only on the tries that one says to.
    private func commitFailed(_ batch: Batch, _ error: any Error, _ message: String, _ fields: [(String, LogValue)]) {
        let loud = batch.commitRetry.failed("\(error)", now: TransferEngine.monotonic())
        logger.log(loud ? .error : .debug, message, id: batch.name,
                   [("reason", "\(error)")] + fields + [("failures", "\(batch.commitRetry.failures)"),
                                                        ("retry_in_seconds", "\(BatchCommitRetry.delay(afterFailures: batch.commitRetry.failures))")])
    }

    /// Lines handed to the scheduler in one round at most: the lines that may wait are fed
    /// up to a remote batch's worth (50,000), and all at once they would fill the engine's
    /// and the lane's inboxes with that many tasks at a time. The next round follows at once.
    static let feedChunk = 2048

    /// How long a batch that could not be resumed for want of room waits before it is read again.
    static let noRoomRetrySeconds = 60.0

    static func outcomeName(_ code: UInt8) -> String {
        switch code {
        case UInt8(ascii: "s"): "succeeded"
        case UInt8(ascii: "c"): "cancelled"
        case UInt8(ascii: "e"): "expired"
        default: "failed"
        }
    }

    /// Once every line has ended (or, cancelled, once none is in flight): the lines never
    /// sent are written as cancelled, then the batch is published.
    private func finishIfDone(_ batch: Batch) {
        guard !batch.abandoned else { return }
        // Lines written as cancelled that could not be committed yet wait in `ended` for the
        // next try: added again each round, they would pile up for as long as the disk stays full.
        if batch.cancelled && batch.inWindow.isEmpty && batch.ended.isEmpty
            && batch.journal.committed.count + batch.unnamed.count < batch.index.count {
            var entry = 0
            while entry < batch.index.count {
                let upper = min(batch.index.count, entry + 4096)
                for line in entry..<upper where !batch.journal.committed.contains(line) && !batch.unnamed.contains(line) {
                    batch.ended.append(Ended(entry: line, customID: nil, result: batch.expiring ? .expired : .cancelled, usage: nil))
                }
                commit(batch)
                guard batch.ended.isEmpty else { return }
                entry = upper
            }
            batch.next = batch.index.count
        }
        guard batch.journal.committed.count + batch.unnamed.count >= batch.index.count, batch.inWindow.isEmpty else { return }
        // Asked again, as before a commit: a daemon that took the claim over since the last
        // commit here has the output under its own copy, which this one must not publish.
        if BatchClaimRules.commit(stillMine: leases.map { $0.stillMine(BatchClaimRules.claimID(batch: batch.name)) }) == .abandon {
            abandon(batch)
            return
        }
        guard draining || batch.commitRetry.mayTry(now: TransferEngine.monotonic()) else { return }
        do {
            try keepOutputNamed(batch)
        } catch is OutputTakenOver {
            abandon(batch)
            return
        } catch {
            // Published now, whatever stands under the name would become the batch's output
            // (a folder put there was renamed to it, every line lost): tried again, as a commit.
            commitFailed(batch, error, "cannot publish the batch's output; it is tried again", [])
            return
        }
        // The output is renamed, not removed: closed now. The journal is removed by the plan,
        // its descriptor goes there with the input's (see `publish`).
        batch.outputFile = nil
        let journalFile = batch.journalFile.take()
        for attempted in batch.attempted { answer(attempted, durable: false) }
        batches[batch.name] = nil
        stopping.withLock { _ = $0.remove(batch.name) }
        BatchTestStop.at("publish", batch: batch.name, logger: logger)
        publish(name: batch.name, fd: batch.input.take(), journalFile: journalFile, identity: batch.identity, journal: batch.journal,
                outputPublished: false, status: batch.expiring ? .expired : batch.cancelled ? .cancelled : .completed)
        // A newer file under the name waits for this one's end (an end not published is
        // tried again after its pause, not at once).
        if unpublished.failures(of: batch.name) == 0 && Syscall.isPresent(layout.batchRequest(batch.name)) { consider(batch.name) }
    }

    /// The output's name taken while the batch runs (`rm -rf incoming`): its committed
    /// lines are still in the file held open, and are copied to a new output under the
    /// name before more lines go. Appended to nameless, the batch's end would find no output
    /// and publish none, and a restart would find no output to resume and send every line
    /// again.
    ///
    /// On a shared spool, another file under the name is the output of a daemon that took
    /// the claim over (`resume`): this one stops there (`OutputTakenOver`) and gives it up.
    private func keepOutputNamed(_ batch: Batch) throws {
        if let copy = try nameAgain(batch, fd: batch.outputFD, path: layout.batchPartial(batch.name), what: "output") {
            batch.outputFile = consume copy
        }
    }

    /// The journal's twin of `keepOutputNamed`: `state` removed while the batch runs took the
    /// journal's name, and its appends went to a file no restart reads, which then sent
    /// again every line it had committed.
    private func keepJournalNamed(_ batch: Batch) throws {
        if let copy = try nameAgain(batch, fd: batch.journalFD, path: layout.batchJournal(batch.name), what: "journal") {
            batch.journalFile = consume copy
        }
    }

    /// A copy of the file open as `fd` under `path` when the name no longer holds it; nil
    /// when it does (or nothing is open).
    private func nameAgain(_ batch: Batch, fd: Int32, path: String, what: String) throws -> FileDescriptor? {
        guard fd >= 0 else { return nil }
        switch try HeldFile.name(fd, path: path) {
        case .held: return nil
        // On a shared spool too: a folder is no daemon's output, and the batch waits for it
        // to go rather than be given up as taken over.
        case .folder: throw HeldFile.FolderInTheWay(path: path)
        case .another where leases != nil: throw OutputTakenOver()
        case .another, .missing: break
        }
        let copy: FileDescriptor
        do {
            // On a shared spool the claim is asked again around the naming itself: this
            // daemon's look before the group's writes may be from before a pause, and the
            // name gone because the taker published the batch and removed it.
            copy = try HeldFile.giveNameAgain(from: fd, to: path, flags: O_RDWR | O_APPEND, replacing: leases == nil, layout: layout,
                                              logger: logger, stillMine: { claimStillMine(batch.name) },
                                              provenLost: { claimProvenLost(batch.name) })
        } catch is HeldFile.ClaimLostDuringTakeover {
            throw OutputTakenOver()
        }
        logger.warning("the batch's \(what) was removed while it ran; written again from the file still open", id: batch.name,
                       ["path": LogValue(path), "committed": "\(batch.journal.committed.count)"])
        return copy
    }

    private func closeOutputs(_ batch: Batch) {
        batch.outputFile = nil
        batch.journalFile = nil
    }

    private func close(_ batch: Batch) {
        closeOutputs(batch)
        batch.input = nil
    }

    /// Runs the end's publication plan; the input's and the journal's descriptors are closed
    /// after it, either way.
    @discardableResult
    private func publish(name: String, fd: consuming FileDescriptor?, journalFile: consuming FileDescriptor? = nil, identity: FileIdentity?,
                         journal: BatchJournal, outputPublished: Bool, status: BatchSummary.Status, releaseClaim: Bool = true) -> Bool {
        // Held open while the plan removes the input and the journal, closed after: on sshfs,
        // a close followed at once by the unlink can leave the file as `.fuse_hidden*` for
        // good, an unlink while open never does (`FileDescriptor.unlinkThenClose`).
        defer {
            fd = nil
            journalFile = nil
        }
        let cancelled = status != .completed
        var summary = BatchSummary(name: name, status: status, endpoint: journal.header.endpoint, total: journal.header.lines,
                                   counts: journal.counts, createdAt: journal.header.createdAt, endedAt: Int(Date().timeIntervalSince1970),
                                   inputFile: layout.batchRequest(name), outputFile: layout.batchOutput(name))
        let held = unpublished.entries[name]?.detail
        // Its `.partial` gone, cut or replaced though the output never got its name: removed
        // by hand while the end was held (`HeldEndOutput`). The summary says the answers are
        // lost rather than name as the output whatever is at its name, or send every line
        // again. On a shared spool only while this daemon has held the batch's claim all
        // along (`claimStillMine`): else another daemon may have taken the end over and
        // published it meanwhile. A look that fails (ESTALE, EIO) holds the end: a loss said
        // is not taken back.
        var outputLost = false
        var lookFailed: (any Error)?
        if held?.outputUnnamed == true, claimStillMine(name) {
            do {
                outputLost = HeldEndOutput.isLost(outputUnnamed: true, partial: try partialLook(name), committedLength: journal.outputLength)
            } catch {
                lookFailed = error
            }
        }
        summary.outputLost = outputLost
        let ended: BatchSummary.Status = outputLost ? .failed : status
        summary.status = ended
        // An end run again whose output is gone: its consumer took it, with the summary it
        // waited for. (Unsure, the end is published again: a summary twice, never none.) Not
        // so for an end of this run tried again, whose summary is known never to have been
        // written: a consumer that took the output without waiting for it still gets it.
        var outputTaken = false
        if outputPublished && held == nil {
            do {
                outputTaken = try !Syscall.exists(layout.batchOutput(name))
            } catch {
                logger.warning("cannot tell whether the batch's output is still there; its end is published again", id: name, ["reason": "\(error)"])
            }
            if outputTaken { logger.info("the batch's output was taken by its consumer; its end is not published again", id: name) }
        }
        let summaryWritten = held?.summaryWritten ?? false
        let steps = PublicationPlan.batchEnd(name: name, input: layout.batchRequest(name), identity: identity, summary: summary.encoded(),
                                             outputPublished: outputPublished, outputTaken: outputTaken, outputLost: outputLost,
                                             summaryPublished: summaryWritten,
                                             hasFailedLines: journal.counts.notSucceeded > 0, layout: layout, hookNote: hookNote(name))
        // A folder at the output's name when the output counts as published (its `.partial`
        // gone): a summary now would point at the folder as the batch's output.
        let naming = PublicationStep.rename(from: layout.batchPartial(name), to: layout.batchOutput(name))
        // A folder at the output's name with no `.partial` left: no output is anywhere, and
        // none ever got its name while the folder stood (said again after a restart, which
        // knows nothing of the end's earlier tries).
        let folderAtOutput = outputPublished && !outputTaken && !outputLost && Syscall.isFolder(layout.batchOutput(name))
        let outcome: PublicationExecutor<SpoolFiles>.Result = if let lookFailed {
            .failed(at: 0, step: naming, error: lookFailed)
        } else if let claim = leases?.claimState(BatchClaimRules.claimID(batch: name)), claim != .mine {
            // Asked again just before the plan, which acts on the names: a daemon paused past
            // its lease since its last look may wake after the taker published the batch and
            // a new file of the name began, whose `.partial`, journal and list of custom_ids
            // the plan would publish or remove as this batch's. Unconfirmed, it waits too.
            .failed(at: 0, step: naming, error: claim == .lost ? ClaimLostBeforeEnd() as any Error : ClaimUnconfirmedBeforeEnd())
        } else if folderAtOutput {
            .failed(at: 0, step: naming, error: HeldFile.FolderInTheWay(path: layout.batchOutput(name)))
        } else {
            executor.run(steps)
        }
        switch outcome {
        case .failed(let index, let step, let error):
            // The journal stays: the end is tried again after a pause (and by the next start).
            let written = summaryWritten || steps[..<index].contains(PublicationStep.writeFile(layout.batchSummary(name), summary.encoded()))
            let renamed = steps[..<index].contains(naming)
            let unnamed = !renamed && (!outputPublished || held?.outputUnnamed == true || folderAtOutput)
            // A daemon paused past its lease just before its end finds the files gone because
            // the taker published them: not an error of the spool's. Held all the same (a
            // claim look that failed is no proof); the next try forgets it once the journal is gone.
            let claimLost = error is ClaimLostBeforeEnd || (!(error is ClaimUnconfirmedBeforeEnd) && claimProvenLost(name))
            let message = claimLost ? "the batch's end was not published here: its claim is no longer this daemon's, and the daemon that took the batch over publishes it"
                                    : "cannot publish the batch's end; it is tried again"
            self.held(&unpublished, name, error, message, [("step", LogValue(step.kind))], level: claimLost ? .warning : .error) { failures in
                let counts = journal.counts
                var shown = BatchProgress(name: name, total: journal.header.lines, succeeded: counts.succeeded, failed: counts.notSucceeded,
                                          inFlight: 0, startedAt: Double(journal.header.createdAt), updatedAt: Date().timeIntervalSince1970,
                                          cancelled: cancelled)
                shown.publishProblem = "\(error)"
                shown.publishFailures = failures
                return HeldBatch(progress: shown, summaryWritten: written, journal: journal, outputUnnamed: unnamed)
            }
            return false
        case .completed(let notes):
            for case .hookNotNoted(let path, let reason) in notes {
                logger.warning("cannot note the hook this batch owes; it runs, but a kill before it has run loses it", id: name,
                               ["note": LogValue(path), "reason": LogValue(reason)])
            }
        case .stopped:
            break
        }
        if releaseClaim { leases?.release(BatchClaimRules.claimID(batch: name), ended: BatchClaimRules.releaseEnds(batchEnded: true)) }
        let failures = unpublished.succeeded(name)
        if failures > 0 { logger.info("the batch's end is published after failed tries", id: name, ["failures": "\(failures)"]) }
        let counts = journal.counts
        metrics.batch(ended.rawValue)
        let message = ended != .completed ? "batch \(ended.rawValue)" : "batch done"
        if outputLost {
            logger.error("the batch's output was removed before it was published; its answers are lost, and its summary says so", id: name,
                         ["summary": LogValue(layout.batchSummary(name)), "lines": "\(journal.header.lines)"])
        }
        if outputTaken || outputLost {
            // No output left to point at.
            logger.info(message, id: name, [outputLost ? "output_lost" : "output_taken": "true", "lines": "\(journal.header.lines)", "succeeded": "\(counts.succeeded)",
                                            "failed": "\(counts.notSucceeded)"])
        } else {
            logger.info(message, id: name, ["output": LogValue(layout.batchOutput(name)), "lines": "\(journal.header.lines)",
                                            "succeeded": "\(counts.succeeded)", "failed": "\(counts.notSucceeded)"])
        }
        onEnd(EndReport(name: name, status: ended.rawValue, total: journal.header.lines, succeeded: counts.succeeded,
                        failed: counts.notSucceeded, outputPath: layout.batchOutput(name), summaryPath: layout.batchSummary(name)))
        return true
    }

    /// An invalid batch: its record lists the first problems with their lines; the file is
    /// moved to `failed` beside it.
    private func reject(_ name: String, problems: [BatchProblem], count: Int, identity: FileIdentity?) {
        let path = layout.batchRequest(name)
        let first = problems.first?.description ?? "the batch is invalid"
        var record: [String: Any] = [
            "id": name,
            "status": "failed",
            "kind": "invalid-batch",
            "message": "\(path): \(first)",
            "problem_count": count,
            "problems": problems.map { problem -> [String: Any] in
                var item: [String: Any] = ["kind": problem.problem.kind.rawValue, "message": problem.problem.message]
                if let line = problem.line { item["line"] = line }
                if let column = problem.problem.column, problem.line != nil { item["column"] = column }
                return item
            },
            "request": layout.failedBatch(name),
            "failed_at": Timestamp.string(Date()),
        ]
        if count > problems.count { record["problems_not_listed"] = count - problems.count }
        let steps = PublicationPlan.batchRejection(name: name, input: path, identity: identity, errorRecord: JSONObject.encode(record), layout: layout,
                                                   hookNote: hookNote(name))
        if case .failed(_, let step, let error) = executor.run(steps) {
            logger.error("cannot move the invalid batch to failed; it is tried again", id: name, ["step": LogValue(step.kind), "reason": "\(error)"])
            settle(name, "the rejection failed")
            return
        }
        leases?.release(BatchClaimRules.claimID(batch: name), ended: BatchClaimRules.releaseEnds(batchEnded: true))
        metrics.batch("failed")
        logger.warning("batch refused", id: name, ["reason": LogValue(first), "problems": "\(count)", "record": LogValue(layout.batchErrorRecord(name))])
        onEnd(EndReport(name: name, status: "failed", total: 0, succeeded: 0, failed: 0, outputPath: layout.failedBatch(name),
                        summaryPath: layout.batchErrorRecord(name)))
    }

    private func publishProgress() {
        let now = Date().timeIntervalSince1970
        var snapshot: [String: BatchProgress] = [:]
        for batch in batches.values {
            let counts = batch.journal.counts
            snapshot[batch.name] = BatchProgress(name: batch.name, total: batch.index.count, succeeded: counts.succeeded,
                                                 failed: counts.notSucceeded, inFlight: batch.inWindow.count,
                                                 startedAt: Double(batch.journal.header.createdAt), updatedAt: now,
                                                 cancelled: batch.cancelled, commitProblem: batch.commitRetry.problem,
                                                 commitFailures: batch.commitRetry.failures)
        }
        for (name, entry) in unpublished.entries where snapshot[name] == nil { snapshot[name] = entry.detail.progress }
        for (name, entry) in unstarted.entries where snapshot[name] == nil { snapshot[name] = entry.detail.progress }
        live.withLock { $0 = snapshot }
    }
}

extension BatchRunner {
    /// The batch's claim is no longer this daemon's when its end is to be published.
    struct ClaimLostBeforeEnd: Error, CustomStringConvertible {
        var description: String { "the batch's claim is no longer this daemon's" }
    }

    /// The batch's claim cannot be confirmed (its lease unreadable now, or its time passed)
    /// when its end is to be published.
    struct ClaimUnconfirmedBeforeEnd: Error, CustomStringConvertible {
        var description: String { "the batch's claim cannot be confirmed now (its lease unreadable, or its time passed)" }
    }

    /// Another daemon took the batch over and has the output under its own copy.
    struct OutputTakenOver: Error, CustomStringConvertible {
        var description: String { "the batch's output is another daemon's now" }
    }

    /// The daemon is stopping: a validation under way gives up, the file stays in `outgoing`.
    struct Interrupted: Error, CustomStringConvertible {
        var description: String { "the daemon is stopping" }
    }
}

/// A batch's line as the scheduler knows it: its id is `SpoolLayout.lineID`.
struct BatchLineRef: Sendable, Equatable {
    var batch: String
    var entry: Int

    init(batch: String, entry: Int) {
        self.batch = batch
        self.entry = entry
    }

    /// Read from the id's bytes: the engine and the finisher ask several times for every
    /// attempt of every request, and with Foundation's backwards search it cost about 7 us
    /// per batch line on the engine's thread (2.5 us this way).
    init?(id: String) {
        let bytes = id.utf8
        let suffix = SpoolLayout.batchSuffix.utf8
        guard bytes.first == UInt8(ascii: "."), let dot = bytes.lastIndex(of: UInt8(ascii: ".")),
              let entry = Int(id[bytes.index(after: dot)...]) else { return nil }
        let name = id[bytes.index(after: bytes.startIndex)..<dot]
        guard name.utf8.count >= suffix.count, name.utf8.suffix(suffix.count).elementsEqual(suffix) else { return nil }
        batch = String(decoding: name.utf8.dropLast(suffix.count), as: UTF8.self)
        self.entry = entry
    }
}
