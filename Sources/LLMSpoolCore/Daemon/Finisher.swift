import Foundation
import Glibc
import Synchronization

/// Writes the outcome of each attempt to the spool, on the worker pool, and decides
/// whether a failed attempt is tried again. What is written, and in which order, is
/// `PublicationPlan`'s (pure, tested crash after every step); the finisher judges the
/// attempt, builds the plan and runs it with a `PublicationExecutor` over `SpoolFiles`.
public final class Finisher: Sendable {
    /// Largest provider error body kept in a record.
    static let providerBodyLimit = 64 * 1024
    /// Largest plain answer checked for JSON validity.
    static let plainAnswerLimit = 256 * 1024 * 1024

    /// What a configuration reload may change.
    struct Policy: Sendable {
        var retry: RetrySettings
        /// Each endpoint's api, in the config's order.
        var endpointAPIs: [EndpointAPI]
        var endpointCount: Int { max(1, endpointAPIs.count) }

        /// How many endpoints could carry `task` (`RetryPolicy.carriers`).
        func carriers(of task: TaskDescriptor) -> Int {
            RetryPolicy.carriers(pinned: task.pinnedEndpoint != nil, api: DialectRegistry.dialect(for: task.summary).api, endpointAPIs: endpointAPIs)
        }
    }

    let layout: SpoolLayout
    private let executor: PublicationExecutor<SpoolFiles>
    let logger: Logger
    let policy: Mutex<Policy>
    let random: @Sendable () -> Double
    /// Set by the daemon: the lines of batch files end there.
    let batches = Mutex<BatchRunner?>(nil)
    private let report: @Sendable (TaskReport) -> Void
    private let metrics: Metrics
    /// The starts held by the spool's look, released by the status thread (`HeldStarts`).
    let heldStarts = HeldStarts()
    /// Set when daemons share the spool: nothing is published without the lease.
    private let leases: LeaseManager?
    private let diskHealth: DiskHealth
    /// Tasks whose outcome this run committed and reported, with their request still in
    /// `outgoing` (its removal failed): the scan that removes it reports nothing again. An
    /// entry goes with that clean-up, or when the request leaves `outgoing` otherwise
    /// (`requestLeft`), else it would stay for the daemon's life.
    /// Outcomes reported at their commit whose publication a later scan completes; true
    /// when the outcome's hook waits for that (`TaskReport.Hook.waitsForCleanUp`).
    private let reportedAwaitingCleanUp = Mutex<[String: Bool]>([:])
    /// The endpoints' keys, blanked out of every failure before it is recorded or logged,
    /// and of the background lane's steps' answers (`secretRedaction`).
    private let redaction = Mutex(SecretRedaction())
    private let formats: FormatContext
    /// How successes commit on this spool, decided once at start (`CommitOrder.choose`).
    let commitOrder: PublicationPlan.CommitOrder
    /// Which outcomes note the hook they owe before their commit point (`HookRecovery`).
    private let hookNotes = Mutex(HookNotes())

    /// The outcomes whose hook is noted as owed, in `state/hooks`, until it has run: those
    /// a hook is configured for, on a spool one daemon runs.
    public struct HookNotes: Sendable, Equatable {
        public var onComplete: Bool
        public var onFailure: Bool

        public init(onComplete: Bool = false, onFailure: Bool = false) {
            self.onComplete = onComplete
            self.onFailure = onFailure
        }
    }

    /// A note of a hook owed that could not be written does not hold the outcome back.
    private func logHookNotNoted(_ path: String, reason: String, id: String) {
        logger.warning("cannot note the hook this outcome owes; it runs, but a kill before it has run loses it", id: id,
                       ["note": LogValue(path), "reason": LogValue(reason)])
    }

    /// Sets which outcomes note their hook (at start, from the hooks configured).
    public func noteHooks(_ notes: HookNotes) {
        hookNotes.withLock { $0 = notes }
    }

    public init(layout: SpoolLayout, logger: Logger, retry: RetrySettings, endpointAPIs: [EndpointAPI], metrics: Metrics = Metrics(), leases: LeaseManager? = nil,
                diskHealth: DiskHealth = DiskHealth(), formats: FormatContext = FormatContext(yaml: LibYAML.reader), commitOrder: PublicationPlan.CommitOrder = .recordFirst,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                report: @escaping @Sendable (TaskReport) -> Void) {
        self.commitOrder = commitOrder
        self.diskHealth = diskHealth
        self.formats = formats
        self.metrics = metrics
        self.leases = leases
        self.executor = PublicationExecutor(files: SpoolFiles(layout: layout, shared: leases != nil), beforeStep: Finisher.testPause(logger: logger))
        self.layout = layout
        self.logger = logger
        self.policy = Mutex(Policy(retry: retry, endpointAPIs: endpointAPIs))
        self.random = random
        self.report = report
    }

    /// With `LLMSPOOL_TEST_PUBLICATION_PAUSE_MS` set (tests only), each publication step is
    /// logged and preceded by that pause, so that a test can kill the daemon inside a
    /// known step instead of by luck. With `LLMSPOOL_TEST_PUBLICATION_HOLD_AT` = k as well,
    /// the k-th step of the process (counted from 1) is logged and then waits for ever: a
    /// kill that comes late on a loaded machine still lands inside that step.
    static func testPause(logger: Logger) -> @Sendable (Int, PublicationStep) -> Bool {
        guard let text = getenv("LLMSPOOL_TEST_PUBLICATION_PAUSE_MS").map({ String(cString: $0) }),
              let milliseconds = UInt32(text), milliseconds > 0 else { return { _, _ in true } }
        let holdAt = getenv("LLMSPOOL_TEST_PUBLICATION_HOLD_AT").flatMap { Int(String(cString: $0)) }
        let count = Atomic<Int>(0)
        return { index, step in
            logger.info("publication step", ["index": "\(index)", "step": LogValue(step.kind)])
            let number = count.wrappingAdd(1, ordering: .relaxed).newValue
            repeat { usleep(milliseconds * 1000) } while number == holdAt
            return true
        }
    }

    /// The keys a provider might echo back: every endpoint's. The background lane calls
    /// the same endpoints with the same keys and has none of its own; it reads this set
    /// (`secretRedaction`) rather than keeping a second one that a reload could leave behind.
    public func redact(secrets: [String]) {
        redaction.withLock { $0 = SecretRedaction(secrets: secrets) }
    }

    /// The keys as set last: the background lane blanks them out of its steps' answers.
    var secretRedaction: SecretRedaction { redaction.withLock { $0 } }

    public func reconfigure(retry: RetrySettings, endpointAPIs: [EndpointAPI]) {
        policy.withLock { $0 = Policy(retry: retry, endpointAPIs: endpointAPIs) }
    }

    /// A success whose files are written, fsynced and recorded, waiting for the folder
    /// fsyncs it shares with the other successes of its batch.
    public struct PreparedSuccess: Sendable {
        let success: PublicationPlan.Success
        /// The spool's order, or record-first for a result that could not be marked.
        let order: PublicationPlan.CommitOrder
        let outcome: AttemptOutcome
        let usage: [String: Int]?
        var task: TaskDescriptor { success.task }
    }

    /// What `prepare` leaves to do.
    public enum Prepared: Sendable {
        /// Nothing: the scheduler must receive this event.
        case ended(Scheduler.Event)
        /// The commit of a batch, with `commit`.
        case success(PreparedSuccess)
    }

    /// Publishes an attempt's outcome, or schedules the next attempt. Returns the event
    /// the scheduler must receive.
    public func finish(_ outcome: AttemptOutcome) -> Scheduler.Event {
        switch prepare(outcome) {
        case .ended(let event): event
        case .success(let prepared): commit([prepared])[0]
        }
    }

    /// Everything of an outcome that is the request's own: the verdict, and for a success
    /// the result's bytes and its task record, durable. The folders' fsyncs are left to
    /// `commit`, which shares them among every success ready at the time.
    public func prepare(_ outcome: AttemptOutcome) -> Prepared {
        if let line = BatchLineRef(id: outcome.task.id) { return .ended(finishLine(outcome, line)) }
        let prepared = prepareHoldingLease(outcome)
        if case .ended(let event) = prepared { leases?.release(outcome.task.id, ended: Finisher.endsTask(event)) }
        return prepared
    }

    /// Whether `event` ends the task here: its lease becomes a tombstone. A retry (or a
    /// postponement) keeps the request in `outgoing` for whoever claims it next.
    static func endsTask(_ event: Scheduler.Event) -> Bool {
        if case .retry = event { return false }
        return true
    }

    private func prepareHoldingLease(_ outcome: AttemptOutcome) -> Prepared {
        let id = outcome.task.id
        if let leases, outcome.ending == .leaseLost || !leases.stillMine(id) {
            // The request is another daemon's now: its partial, record and result are its
            // own. This attempt leaves nothing behind.
            outcome.partial?.discard()
            // Only closed: the path may be the other daemon's temporary by now.
            outcome.stream?.spill?.discard()
            logger.info("attempt discarded: another daemon holds the request now", id: id)
            return .ended(.finalized(id: id))
        }
        // What follows writes to `incoming` and `state` (a failure's plan, `fail`, and the
        // commit look at every folder themselves).
        if let problem = layout.integrityProblem(of: [layout.incoming, layout.state]) {
            // Every name below would lead outside the spool the request came from: the
            // answer is dropped unwritten (only closed) and the request, still in its
            // `outgoing`, is sent again once the spool is back. One outcome, paid twice.
            outcome.partial?.discard()
            outcome.stream?.spill?.discard()
            // The attempt ended without a crash: it must not count toward the crash guard.
            var task = outcome.task
            task.history = CrashGuard.ended(task.history)
            return .ended(holdWhileElsewhere(task, problem, dropped: outcome.bytesReceived > 0 ? "an answer" : nil))
        }
        if case .diskError = outcome.ending, outcome.bytesSent == 0, outcome.bytesReceived == 0, let problem = layout.integrityProblem() {
            // Held before its start by the look at every folder (`DiskHealth.holdReason`; the
            // look above covers only the two this path writes to): nothing was sent, so it is
            // no attempt, and no record could be written anyway.
            var task = outcome.task
            task.history = CrashGuard.ended(task.history)
            return .ended(holdWhileElsewhere(task, problem, dropped: nil))
        }
        let partial = outcome.rawPath ?? layout.partial(id)
        let partialName = giveNamesAgain(outcome, partial: partial)
        // An answer whose name was lost is judged by its own bytes: the name's are another file's.
        let verdict = judge(outcome, partial: partial, throughHeld: partialName != .unknown)
        // A prompt file's text view goes with the raw answer whenever the attempt leaves nothing.
        let removePartials = { [layout, logger] in
            logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(partial) }
            if partial != layout.partial(id) { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(layout.partial(id)) } }
        }
        var task = outcome.task
        task.history = CrashGuard.ended(task.history)
        var entry = AttemptEntry(startedAt: outcome.startedAt, endedAt: outcome.endedAt, endpoint: outcome.endpointName,
                                 outcome: "ok", bytesSent: outcome.bytesSent, bytesReceived: outcome.bytesReceived)
        if case .response(let status) = outcome.ending { entry.httpStatus = status }
        entry.remoteBatch = outcome.remoteBatch
        entry.providerRequestID = ProviderRequestID.from(headers: outcome.headers, redaction: secretRedaction)
        if case .lost(let reason) = partialName, case .success = verdict {
            // Whatever is under the name now is another file (the answer's own could not be
            // put back): published, it would be someone else's bytes as this request's answer.
            outcome.partial?.discard()
            discardSpill(outcome)
            entry.outcome = AttemptFailure.Kind.disk.rawValue
            entry.message = "the answer's file was replaced while the answer arrived and could not be written again: \(reason)"
            task.history.attempts.append(entry)
            return .ended(postpone(task, because: "the answer's file \(partial) was replaced while the answer arrived, and the answer could not be written again under its name: \(reason)"))
        }
        switch verdict {
        case .cancelled:
            // Removed before their descriptors close (`FileDescriptor.unlinkThenClose`).
            removePartials()
            outcome.partial?.discard()
            discardSpill(outcome)
            entry.outcome = "cancelled"
            task.history.attempts.append(entry)
            // The request may have left because another daemon answered it: its record stays.
            if LeaseRules.mayRecordCancelled(over: TaskRecord.load(layout, id: id)?.status) {
                logger.bestEffort("an informational write") { try TaskRecord(id: id, status: .cancelled, request: task.identity, history: task.history).write(layout, durable: false) }
            }
            logger.info("cancelled: the request left outgoing while in flight", id: id, ["bytes_received": "\(outcome.bytesReceived)"])
            report(TaskReport(id: id, outcome: .cancelled, request: outcome.task.identity))
            return .ended(.finalized(id: id))
        case .success(let assembled, let usage):
            task.history.attempts.append(entry)
            do {
                let (success, order) = try writeSuccess(outcome, task: task, assembled: assembled, usage: usage)
                return .success(PreparedSuccess(success: success, order: order, outcome: outcome, usage: usage))
            } catch let error as SpoolElsewhereError {
                return .ended(holdWhileElsewhere(task, error.description, dropped: "an answer"))
            } catch {
                return .ended(postpone(task, because: "publishing the result failed: \(error)"))
            }
        case .failure(let failure):
            // Removed before their descriptors close (`FileDescriptor.unlinkThenClose`).
            removePartials()
            outcome.partial?.discard()
            discardSpill(outcome)
            if failure.kind == .disk { diskHealth.writeFailed() }
            entry.outcome = failure.kind.rawValue
            entry.message = failure.message
            entry.timer = failure.timer?.rawValue
            task.history.attempts.append(entry)
            let now = Date()
            let policy = self.policy.withLock { $0 }
            let plan = RetryPolicy.plan(failure, headers: outcome.headers, history: task.history, endpointIndex: outcome.endpointIndex,
                                        endpointCount: policy.endpointCount, carriers: policy.carriers(of: task), now: now, settings: policy.retry,
                                        random: random())
            switch plan {
            case .retry(let delay, let endpoint, _):
                let at = now.addingTimeInterval(delay)
                task.history.notBefore = at
                task.history.preferredEndpoint = endpoint
                let record = TaskRecord(id: id, status: .active, request: task.identity, history: task.history)
                if case .failed(_, _, let error) = executor.run(PublicationPlan.retry(task: task, record: record, layout: layout)) {
                    logger.warning("cannot record the attempt; it is kept in memory only", id: id, ["reason": "\(error)"])
                }
                metrics.retry(failure.kind.rawValue, endpoint: outcome.endpointName)
                logger.info("attempt failed; will retry", id: id, ["attempt": "\(task.history.attempts.count)", "kind": LogValue(failure.kind.rawValue),
                                                                   "reason": LogValue(failure.message), "retry_in_seconds": "\((delay * 100).rounded() / 100)"])
                return .ended(.retry(task, at: at.timeIntervalSince1970))
            case .giveUp(let reason):
                var final = failure
                if reason != .notRetryable {
                    final = AttemptFailure(failure.kind, "\(failure.message); \(reason)", httpStatus: failure.httpStatus,
                                           providerBody: failure.providerBody, curlCode: failure.curlCode, timer: failure.timer,
                                           embeddedCode: failure.embeddedCode)
                }
                return .ended(fail(task: task, failure: final, problem: nil, commit: true))
            }
        }
    }

    /// Fails a request that was never sent (bad file, bad name). Validation is repeatable,
    /// so no commit record is needed: a crash here only means the same rejection again.
    public func reject(id: String, requestPath: String, problem: RequestProblem) -> Scheduler.Event {
        if let line = BatchLineRef(id: id) {
            batches.withLock { $0 }?.lineEnded(line, customID: nil, result: .failed(code: AttemptFailure.Kind.invalidRequest.rawValue,
                                                                                    message: problem.description, status: nil, body: nil), usage: nil)
            return .finalized(id: id)
        }
        guard claimForEnding(id, "a rejection") else { return .finalized(id: id) }
        let (event, ended) = rejectHoldingLease(id: id, requestPath: requestPath, problem: problem)
        leases?.release(id, ended: ended)
        return event
    }

    /// On a shared spool, nothing is judged or moved without the request's lease: another
    /// daemon may be answering it, or may have just answered it (a stale cache still shows
    /// the file). Returns whether this daemon may go on.
    private func claimForEnding(_ id: String, _ what: String) -> Bool {
        guard let leases else { return true }
        switch leases.claimIfNeeded(id) {
        case .claimed:
            return true
        case .heldElsewhere:
            logger.debug("\(what) left to the daemon holding the request", id: id)
            return false
        case .failed(let reason):
            logger.warning("cannot claim the request; will look again", id: id, ["reason": LogValue(reason)])
            return false
        }
    }

    /// The event, and whether the task ended (its lease a tombstone): a rejection that
    /// could not be written did not, and the next scan finds it again.
    private func rejectHoldingLease(id: String, requestPath: String, problem: RequestProblem) -> (Scheduler.Event, ended: Bool) {
        let task = TaskDescriptor(id: id, requestPath: requestPath, summary: RequestSummary(model: "", stream: false, size: 0))
        let failure = AttemptFailure(.invalidRequest, "\(requestPath): \(problem.description)")
        let event = fail(task: task, failure: failure, problem: problem, commit: false)
        if case .retry = event { return (.finalized(id: id), false) }
        return (event, Finisher.endsTask(event))
    }

    /// Fails a valid request that no configured endpoint speaks, before it is sent: it goes
    /// to `failed/` with its record like any other failure (kind `no-endpoint`).
    public func unservable(task: TaskDescriptor, message: String) -> Scheduler.Event {
        if let line = BatchLineRef(id: task.id) {
            // A batch's line has no file of its own to move: it ends as a failed line of its
            // batch's output. Failed as a request, it took the batch's input to `failed/`
            // under the line's name, and the batch never ended.
            batches.withLock { $0 }?.lineEnded(line, customID: task.summary.customID,
                                                result: .failed(code: AttemptFailure.Kind.noEndpoint.rawValue, message: message, status: nil, body: nil),
                                                usage: nil)
            return .finalized(id: task.id)
        }
        guard claimForEnding(task.id, "a request no endpoint speaks") else { return .finalized(id: task.id) }
        let event = fail(task: task, failure: AttemptFailure(.noEndpoint, message), problem: nil, commit: true)
        leases?.release(task.id, ended: Finisher.endsTask(event))
        return event
    }

    /// Completes the clean-up of a task whose record says it ended before a restart.
    public func completeEnded(id: String, requestPath: String, identity: FileIdentity? = nil) -> Scheduler.Event {
        guard claimForEnding(id, "the clean-up of an ended task") else { return .finalized(id: id) }
        defer { leases?.release(id, ended: true) }
        var loaded = TaskRecord.load(layout, id: id)
        let restored = commitOrder == .resultMarked ? restoredRecord(id: id, requestPath: requestPath, record: loaded) : nil
        if let restored { loaded = restored }
        guard let record = loaded else { return .finalized(id: id) }
        let errorRecordExists: Bool
        do {
            errorRecordExists = try Syscall.exists(layout.errorRecord(id))
        } catch {
            logger.error("cannot complete the clean-up; will try again on the next scan", id: id, ["reason": "\(error)"])
            return .finalized(id: id)
        }
        let steps = PublicationPlan.completion(of: record, requestPath: requestPath, identity: identity ?? ownView(of: requestPath, record),
                                               errorRecordExists: errorRecordExists, layout: layout, restored: restored != nil)
        guard !steps.isEmpty else { return .finalized(id: id) }
        if restored != nil { logger.info("the result proves the request's end; its record is written again", id: id) }
        switch executor.run(steps) {
        case .failed(_, _, let error):
            logger.error("cannot complete the clean-up; will try again on the next scan", id: id, ["reason": "\(error)"])
        case .completed(let notes) where !notes.isEmpty:
            // Already removed (the daemon that ended it did, seen here through a stale
            // cache), or replaced by a newer file: nothing ended here, nothing to report,
            // and no clean-up of this run's outcome is awaited any more.
            logger.debug("the ended request's clean-up found nothing to do", id: id, ["notes": "\(notes)"])
            // The plan's steps ran: a failure's error record is written by now.
            if reportedAwaitingCleanUp.withLock({ $0.removeValue(forKey: id) }) == true {
                reportHookThatWaited(id, request: record.request)
            }
        case .completed, .stopped:
            if let hookWaits = reportedAwaitingCleanUp.withLock({ $0.removeValue(forKey: id) }) {
                // Reported when it was committed, earlier in this run.
                logger.info("the ended request's clean-up is complete", id: id, ["status": LogValue(record.status.rawValue)])
                if hookWaits {
                    reportHookThatWaited(id, request: record.request)
                }
            } else if record.status == .done {
                logger.info("done (completed after a restart)", id: id, ["result": LogValue(layout.result(id))])
                report(TaskReport(id: id, outcome: .succeeded(resultPath: layout.result(id)), request: record.request))
            } else {
                logger.warning("failed (completed after a restart)", id: id, ["record": LogValue(layout.errorRecord(id))])
                report(TaskReport(id: id, outcome: .failed(recordPath: layout.errorRecord(id), kind: .invalidRequest,
                                                           message: "completed after a restart"), request: record.request))
            }
        }
        return .finalized(id: id)
    }

    /// The done record a marked result proves (`Recovery.restoredRecord`), when the record
    /// on disk does not: lost or stale after a power loss in the one-fsync order.
    private func restoredRecord(id: String, requestPath: String, record: TaskRecord?) -> TaskRecord? {
        let resultPath = layout.result(id)
        guard let mark = ResultMarkReader.read(resultPath, id: id, logger: logger) else { return nil }
        let result: stat
        do {
            result = try Syscall.lstat(resultPath)
        } catch {
            logger.debug("the marked result is gone; nothing to restore", id: id, ["reason": "\(error)"])
            return nil
        }
        guard case .success(let request)? = RequestFile.read(path: requestPath, limit: Int(clamping: max(mark.request.size, 0)) + 1) else { return nil }
        return Recovery.restoredRecord(record: record, id: id, identity: request.identity, resultInode: UInt64(result.st_ino),
                                       resultMark: mark, now: Date())
    }

    /// The request file as this mount sees it, when it is the instance `record` speaks of.
    /// A record another mount of a shared spool wrote has that mount's device and inode
    /// numbers, which never match here; the file is then read and compared by what every
    /// mount sees alike (`FileIdentity.isSameInstanceAcrossMounts`).
    private func ownView(of requestPath: String, _ record: TaskRecord) -> FileIdentity? {
        guard let recorded = record.request else { return nil }
        guard case .success(let loaded)? = RequestFile.read(path: requestPath, limit: Int(clamping: max(recorded.size, 0)) + 1),
              loaded.identity.device != recorded.device else { return recorded }
        return loaded.identity.isSameInstanceAcrossMounts(as: recorded) ? loaded.identity : recorded
    }

    /// A request file left `outgoing` while no task of its id is held: a reported outcome
    /// that waited for its clean-up has none left to wait for (deleted by its producer, or
    /// removed by another daemon).
    public func requestLeft(id: String) {
        guard let hookWaits = reportedAwaitingCleanUp.withLock({ $0.removeValue(forKey: id) }) else { return }
        guard hookWaits else {
            logger.debug("the ended request left outgoing before its clean-up; nothing is left to do", id: id)
            return
        }
        // No clean-up will write the failure's error record now: it is written from the task
        // record here, and then its hook runs.
        guard let record = TaskRecord.load(layout, id: id), record.status == .failed else { return }
        do {
            guard try SpoolFiles(layout: layout).writeErrorRecord(from: record) else { return }
        } catch {
            logger.warning("the failed request left outgoing before its error record could be written, which still fails; with a hook owed, the next start writes it and runs the hook, otherwise the failure is in its task record alone",
                           id: id, ["record": LogValue(layout.taskRecord(id)), "reason": "\(error)"])
            return
        }
        logger.info("the failed request left outgoing before its clean-up; its error record is written", id: id)
        reportHookThatWaited(id, request: record.request)
    }

    /// The hook of a failure reported earlier (`TaskReport.Hook.waitsForCleanUp`), now that
    /// its error record is written.
    private func reportHookThatWaited(_ id: String, request: FileIdentity?) {
        report(TaskReport(id: id, outcome: .failed(recordPath: layout.errorRecord(id), kind: .invalidRequest, message: "its record is written"),
                          request: request, hook: .alone))
    }

    /// A queued or waiting request was withdrawn by deleting its file; `identity` is the
    /// file's as it was read, when known.
    public func withdrawn(id: String, identity: FileIdentity? = nil) {
        if let line = BatchLineRef(id: id) {
            batches.withLock { $0 }?.lineEnded(line, customID: nil, result: .cancelled, usage: nil)
            return
        }
        // On a shared spool a request usually leaves because another daemon answered it.
        guard claimForEnding(id, "a withdrawal") else { return }
        defer { leases?.release(id, ended: true) }
        let loaded = TaskRecord.load(layout, id: id)
        var record = loaded ?? TaskRecord(id: id, status: .cancelled, request: nil, history: TaskHistory(firstSeen: Date()))
        // Ended already, its outcome reported where it ended: by another daemon that was
        // killed before its claim said so, or by this one before a restart. Its removal is
        // that end's clean-up, not a withdrawal.
        guard !endedBefore(id: id, record: loaded, removed: identity) else {
            logger.debug("the removed request had ended already; nothing to report", id: id, ["status": LogValue(record.status.rawValue)])
            return
        }
        // A newer file under an ended task's name keeps the old end's record.
        if LeaseRules.mayRecordCancelled(over: record.status) {
            record.status = .cancelled
            logger.bestEffort("an informational write") { try record.write(layout, durable: false) }
        }
        logger.info("cancelled: the request was removed before it started", id: id)
        report(TaskReport(id: id, outcome: .cancelled, request: identity))
    }

    /// Whether the task of the removed file had ended: what a restart would decide
    /// (`Recovery.decide`, with the result as it is now), so that a done record whose
    /// result never got its name (a daemon killed in between) proves nothing. Without the
    /// file's identity (a request the lane returned to the scheduler), an ended record
    /// stands (`LeaseRules.removalFollowsAnEnd`).
    private func endedBefore(id: String, record: TaskRecord?, removed: FileIdentity?) -> Bool {
        guard let removed else { return LeaseRules.removalFollowsAnEnd(record: record, removed: nil) }
        let resultPath = layout.result(id)
        var result: FileIdentity?
        do {
            result = FileIdentity(try Syscall.lstat(resultPath))
        } catch let error as SystemError where error.errno == ENOENT {
            result = nil
        } catch {
            // Unreadable is not proof of an end: the withdrawal is reported.
            logger.warning("cannot look at the result of a removed request", id: id, ["reason": "\(error)"])
            result = nil
        }
        let mark = result != nil && commitOrder == .resultMarked ? ResultMarkReader.read(resultPath, id: id, logger: logger) : nil
        return Recovery.decide(record: record, identity: removed, resultInode: result?.inode,
                               resultModifiedNanoseconds: result?.modifiedNanoseconds, resultMark: mark) == .alreadyEnded
    }

    /// An answer received whole, whose files lost their names meanwhile (`rm -rf incoming`
    /// during the stream): written again from the descriptors still open on them, before
    /// anything reads them by name. Otherwise the answer, paid for, would be taken for lost
    /// and the request sent again. Only an answer the engine held open can come back: one
    /// past its descriptor budget, written by name, lost its bytes with the name.
    /// What the `.partial`'s name leads to after `giveNamesAgain`.
    enum PartialName: Equatable {
        /// The file held open: read through the descriptor, it is what the name publishes.
        case held
        /// Unknown: none is held (an answer written by name), or the name could not be
        /// looked at; it is read and published by name, as it is.
        case unknown
        /// Another file, and the answer could not be written back under the name (no room
        /// for the copy, a folder in the way; `reason` says which): nothing under that name
        /// is this answer.
        case lost(reason: String)
    }

    /// Also says what the `.partial`'s name leads to now.
    @discardableResult
    func giveNamesAgain(_ outcome: AttemptOutcome, partial: String) -> PartialName {
        guard case .response = outcome.ending else { return .unknown }
        let name = giveNameAgain(outcome.partial, path: partial, id: outcome.task.id)
        if let stream = outcome.stream { giveNameAgain(stream.spill, path: stream.spillPath, id: outcome.task.id) }
        return name
    }

    @discardableResult
    private func giveNameAgain(_ owner: DescriptorOwner?, path: String, id: String) -> PartialName {
        guard let owner, let file = owner.take() else { return .unknown }
        let lost: Bool
        do {
            lost = try HeldFile.lostName(file.rawValue, path: path)
        } catch {
            logger.warning("cannot look at the answer's file; it is published as it is", id: id, ["path": LogValue(path), "reason": "\(error)"])
            owner.put(file)
            return .unknown
        }
        guard lost else {
            owner.put(file)
            return .held
        }
        do {
            owner.put(try HeldFile.giveNameAgain(from: file.rawValue, to: path, flags: O_RDWR, replacing: leases == nil, layout: layout,
                                                 logger: logger))
            logger.warning("the answer's file was removed while the answer arrived; written again from the file still open", id: id,
                           ["path": LogValue(path)])
            return .held
        } catch {
            // The original is kept: a name seen missing on a stale view of a shared folder
            // may be there after all (the copy then meets it, EEXIST). If it is not,
            // publishing fails on it, and the request is tried again.
            logger.error("the answer's file was removed while the answer arrived, and cannot be written again", id: id,
                         ["path": LogValue(path), "reason": "\(error)"])
            owner.put(file)
            return .lost(reason: "\(error)")
        }
    }

    /// A plain answer's bytes (at most `plainAnswerLimit`): through the descriptor that
    /// wrote them when `throughHeld` (three calls fewer than an open by name), else by name.
    /// A request's answer is read through the descriptor when its name leads there, or when
    /// the name is another file's for good (`giveNamesAgain`); by name when that is unknown.
    func answerBytes(_ outcome: AttemptOutcome, partial: String, throughHeld: Bool, limit: Int = Finisher.plainAnswerLimit) throws -> [UInt8] {
        if throughHeld, let held = outcome.partial, held.path == partial, let bytes = try held.readFromStart(limit: limit) {
            return bytes
        }
        return try FileReader.prefix(path: partial, limit: limit)
    }

    /// `throughHeld`: the answer may be read through the descriptor held (`answerBytes`).
    func judge(_ outcome: AttemptOutcome, partial: String, throughHeld: Bool) -> AttemptJudge.Verdict {
        let verdict = judgeAsSent(outcome, partial: partial, throughHeld: throughHeld)
        guard case .failure(let failure) = verdict else { return verdict }
        return .failure(redaction.withLock { $0 }.redact(failure))
    }

    private func judgeAsSent(_ outcome: AttemptOutcome, partial: String, throughHeld: Bool) -> AttemptJudge.Verdict {
        if let verdict = AttemptJudge.judgeEnding(outcome.ending, location: outcome.headers["location"], bodyPrefix: {
            if let held = outcome.heldBody { return Array(held.prefix(Finisher.providerBodyLimit)) }
            do {
                return try answerBytes(outcome, partial: partial, throughHeld: throughHeld, limit: Finisher.providerBodyLimit)
            } catch {
                logger.warning("cannot read the answer's body; the record goes without it", id: outcome.task.id, ["reason": "\(error)"])
                return []
            }
        }) {
            return verdict
        }
        guard case .response(let status) = outcome.ending else { return .cancelled }
        let dialect = DialectRegistry.dialect(for: outcome.task.summary)
        do {
            if AttemptJudge.isEventStream(requested: outcome.task.summary.stream, headers: outcome.headers) {
                // Assembled by the event loop as the events arrived: the answer is not read again.
                guard let stream = outcome.stream else {
                    return .failure(AttemptFailure(.incompleteStream, "the stream was not assembled", httpStatus: status))
                }
                return AttemptJudge.judgeStream(status: status, verdict: stream.verdict, dialect: dialect)
            }
            var body: [UInt8] = outcome.heldBody ?? []
            if outcome.heldBody == nil {
                do {
                    body = try answerBytes(outcome, partial: partial, throughHeld: throughHeld)
                } catch let error as SystemError where error.errno == ENOENT && outcome.bytesReceived == 0 {
                    // The `.partial` is created at the first byte: an empty answer has none. That
                    // is the endpoint's fault (malformed, counted by max_attempts), not the disk's.
                    body = []
                }
            }
            return AttemptJudge.judgePlain(status: status, body: body, dialect: dialect, contentEncoding: outcome.headers["content-encoding"])
        } catch {
            return .failure(AttemptFailure(.disk, "reading the answer back failed: \(error)"))
        }
    }

    /// The request's own part of a success: the result's bytes durable, then the task
    /// record that commits to them (durable; its folder is fsynced by `commit`).
    private func writeSuccess(_ outcome: AttemptOutcome, task: TaskDescriptor, assembled: AssembledCompletion?,
                              usage: [String: Int]?) throws -> (PublicationPlan.Success, PublicationPlan.CommitOrder) {
        let id = outcome.task.id
        var source = outcome.rawPath ?? layout.partial(id)
        // Open on `source` (nil when none is held): the plan fsyncs through it, and it
        // closes when this function returns, whichever way.
        let held: FileDescriptor?
        // Its number, which the plan borrows while `held` owns it; -1 when none is held.
        var number: Int32 = -1
        if let assembled {
            outcome.partial?.discard()
            source = SpoolLayout.temporary(for: layout.result(id))
            let file: FileDescriptor
            if let spill = outcome.stream?.spill?.take() {
                file = consume spill
            } else {
                let made = try FileDescriptor.createNew(source, O_WRONLY | O_NOFOLLOW, mode: layout.fileMode)
                // Made by name after the look in `prepareHoldingLease`: looked at again, as
                // the transfer does for the files it makes.
                if let problem = layout.integrityProblem(of: [layout.incoming]) {
                    try made.unlinkThenClose(source)
                    throw SpoolElsewhereError(description: problem)
                }
                file = consume made
            }
            try file.writeAll(assembled.head)
            try file.writeAll(assembled.content)
            try file.writeAll(assembled.tail)
            number = file.rawValue
            held = consume file
        } else {
            outcome.stream?.spill?.discard()
            if let partial = outcome.partial?.take() {
                number = partial.rawValue
                held = consume partial
            } else {
                held = nil
            }
        }
        var record = TaskRecord(id: id, status: .done, request: task.identity, history: task.history, endpoint: outcome.endpointName,
                                usage: usage)
        record.dialect = task.summary.dialect
        let success = PublicationPlan.Success(task: task, record: record, source: source, streamed: assembled != nil,
                                              transcript: transcript(outcome, result: source), rawEvents: outcome.rawPath)
        // `prepareHoldingLease` looked at the spool's names just before.
        let plans = PublicationExecutor(files: SpoolFiles(layout: layout, heldOpen: number < 0 ? [:] : [source: number], shared: leases != nil,
                                                          integrityChecked: true),
                                        beforeStep: executor.beforeStep)
        var failure: Error?
        var order = commitOrder
        let note = hookNotes.withLock { $0.onComplete } ? layout.pendingHook(id, request: task.identity) : nil
        switch plans.run(PublicationPlan.prepare(success, order: commitOrder, hookNote: note)) {
        case .failed(_, .markResult, let error as SystemError) where error.errno == ENOTSUP || error.errno == EOPNOTSUPP:
            // The start-up probe said yes, this file says no (a folder mounted over
            // `incoming` since): nothing is written yet, and the two-fsync order still holds.
            logger.warning("the result cannot carry its mark; committing it with a durable record", id: id, ["reason": "\(error)"])
            order = .recordFirst
            if case .failed(_, _, let error) = plans.run(PublicationPlan.prepare(success, order: .recordFirst, hookNote: note)) { failure = error }
        case .failed(_, _, let error):
            failure = error
        case .completed(let notes):
            for case .hookNotNoted(let path, let reason) in notes { logHookNotNoted(path, reason: reason, id: id) }
        case .stopped:
            break
        }
        if let held {
            do {
                try held.close()
            } catch {
                logger.warning("closing the result written failed; carrying on", id: id, ["reason": "\(error)"])
            }
        }
        if let failure { throw failure }
        return (success, order)
    }

    /// A prompt file's transcript: the file as it was sent and the answer's text, read
    /// back from the result written.
    private func transcript(_ outcome: AttemptOutcome, result: String) -> [UInt8]? {
        guard let request = outcome.requestSource else { return nil }
        let answer: String
        do {
            let bytes = try FileReader.prefix(path: result, limit: Finisher.plainAnswerLimit)
            answer = DialectRegistry.dialect(for: outcome.task.summary).answerText(ofResult: bytes)
                ?? "(the answer has no text; the whole answer is in \(layout.result(outcome.task.id)))"
        } catch {
            logger.warning("cannot read the answer back for the transcript; none is written", id: outcome.task.id, ["reason": "\(error)"])
            return nil
        }
        return RequestFormatRegistry.format(id: outcome.task.summary.format).transcript(of: request, answer: answer, context: formats)
    }

    /// Publishes a batch of prepared successes with one fsync per folder for all of them:
    /// `state` (the records become the commit points), then the renames into `incoming`
    /// and its fsync, then the requests' unlinks and the fsync of `outgoing`. The order of
    /// the steps is that of a single success; only the folder fsyncs are shared. Returns
    /// one event per success, in order.
    public func commit(_ batch: [PreparedSuccess]) -> [Scheduler.Event] {
        let plans = batch.map { PublicationPlan.commit($0.success, layout: layout, order: $0.order) }
        let failed = executor.runBatch(plans)
        // Looked at only when a plan failed: the spool swapped since the results were
        // prepared fails every plan at its first step (`SpoolFiles.mayPublish`).
        let problem = failed.contains { $0 != nil } ? layout.integrityProblem() : nil
        return batch.indices.map { index in
            let prepared = batch[index]
            let id = prepared.task.id
            if let failure = failed[index] {
                guard let point = PublicationPlan.commitPoint(of: plans[index], result: layout.result(id)), failure.index > point else {
                    leases?.release(id, ended: false)
                    if let problem { return holdWhileElsewhere(prepared.task, problem, dropped: "an answer") }
                    return postpone(prepared.task, because: "publishing the result failed: \(failure)")
                }
                // The result has its name: the request ended. Sending it again would make a
                // second outcome; its removal from `outgoing` is left to a later scan.
                logger.warning("the result is published, but the request could not be removed from outgoing; a later scan does it",
                               id: id, ["reason": LogValue(failure.description)])
                reportedAwaitingCleanUp.withLock { $0[id] = false }
            }
            let outcome = prepared.outcome
            if let usage = prepared.usage { metrics.usage(usage, lane: outcome.remoteBatch == nil ? .live : .batch, endpoint: outcome.endpointName) }
            let seconds = (outcome.endedAt.timeIntervalSince(outcome.startedAt) * 1000).rounded() / 1000
            logger.info("done", id: id, ["result": LogValue(layout.result(id)), "endpoint": LogValue(outcome.endpointName),
                                         "attempts": "\(prepared.task.history.attempts.count)", "bytes": "\(outcome.bytesReceived)",
                                         "seconds": "\(seconds)"])
            leases?.release(id, ended: true)
            report(TaskReport(id: id, outcome: .succeeded(resultPath: layout.result(id)), request: prepared.task.identity))
            return .finalized(id: id)
        }
    }

    private func fail(task: TaskDescriptor, failure: AttemptFailure, problem: RequestProblem?, commit: Bool) -> Scheduler.Event {
        if let problem = layout.integrityProblem() { return holdWhileElsewhere(task, problem, dropped: "a failure") }
        let id = task.id
        let recordPath = layout.errorRecord(id)
        let bytes = ErrorRecord.encode(id: id, failure: failure, history: task.history, problem: problem, requestFile: layout.failedRequest(id, like: task.requestPath),
                                       originalName: layout.loadOriginalName(id))
        let record = commit ? TaskRecord(id: id, status: .failed, request: task.identity, history: task.history, errorRecord: bytes) : nil
        let note = hookNotes.withLock { $0.onFailure } ? layout.pendingHook(id, request: task.identity) : nil
        let steps = PublicationPlan.failure(task: task, errorRecord: bytes, record: record, layout: layout, hookNote: note)
        var hook = TaskReport.Hook.now
        switch executor.run(steps) {
        case .failed(let index, _, let error):
            guard let point = PublicationPlan.commitPoint(of: steps, result: layout.result(id)), index > point else {
                return postpone(task, because: "writing the failure record failed: \(error)")
            }
            // The durable record says it failed: the rest (the error record, the request's
            // move to `failed`) is left to a later scan, never another attempt.
            logger.warning("the failure is recorded, but publishing it did not finish; a later scan does it", id: id, ["reason": LogValue("\(error)")])
            let recordStep = steps.firstIndex(of: .writeFile(recordPath, bytes))
            if let recordStep, index <= recordStep {
                hook = .waitsForCleanUp
                // Marked owed: should its request go before a scan writes the record, a start
                // writes it from here (`HookRecovery`); unmarked, a missing record is one its
                // consumer took. A rare path (failed/ unwritable): one more fsync.
                if var owed = record {
                    owed.errorRecordOwed = true
                    do {
                        try SpoolFiles(layout: layout).writeRecord(owed, durable: true)
                    } catch {
                        logger.warning("cannot mark the failure's error record as owed; if its request goes first, no start writes it", id: id,
                                       ["reason": LogValue("\(error)")])
                    }
                }
            }
            reportedAwaitingCleanUp.withLock { $0[id] = hook == .waitsForCleanUp }
        case .completed(let notes):
            for note in notes {
                switch note {
                case .alreadyGone: logger.warning("the request vanished before it could be moved to failed", id: id)
                case .replacedByNewer: logger.info("a newer request of the same id stays in outgoing as a new task", id: id)
                case .hookNotNoted(let path, let reason): logHookNotNoted(path, reason: reason, id: id)
                }
            }
        case .stopped:
            break
        }
        logger.warning("failed", id: id, ["kind": LogValue(failure.kind.rawValue), "reason": LogValue(failure.message), "record": LogValue(recordPath)])
        report(TaskReport(id: id, outcome: .failed(recordPath: recordPath, kind: failure.kind, message: failure.message), request: task.identity,
                          hook: hook))
        return .finalized(id: id)
    }

    /// The outcome could not be written (a full disk, most often): nothing half-done is
    /// left, the request stays in `outgoing`, and the task is tried again later.
    private func postpone(_ task: TaskDescriptor, because reason: String) -> Scheduler.Event {
        diskHealth.writeFailed()  // no new start until a write succeeds (DiskHealth)
        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(layout.partial(task.id)) }
        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(layout.rawEvents(task.id)) }
        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(SpoolLayout.temporary(for: layout.result(task.id))) }
        let delay = RetryPolicy.backoff(afterAttempts: max(1, task.history.attempts.count), settings: policy.withLock { $0.retry }, random: random())
        logger.error("outcome not written; the request stays in outgoing and is tried again", id: task.id,
                     ["reason": LogValue(reason), "retry_in_seconds": "\((delay * 100).rounded() / 100)"])
        report(TaskReport(id: task.id, outcome: .deferred(reason: reason)))
        var next = task
        next.history.notBefore = Date().addingTimeInterval(delay)
        return .retry(next, at: Date().timeIntervalSince1970 + delay)
    }

    /// The spool's names lead outside it (`SpoolLayout.integrityProblem`): nothing is
    /// written or removed through them, and the request, still in its own `outgoing`, is
    /// tried again once the spool is back. `dropped` names what was lost (an answer paid
    /// for); nil for a start that was held before anything was sent. Every start is held
    /// while the problem lasts and comes here again: a dropped answer's request waits the
    /// fourth backoff at least, a held start the longest backoff (10,000 queued requests
    /// held every 4 s took half a core).
    private func holdWhileElsewhere(_ task: TaskDescriptor, _ problem: String, dropped: String?) -> Scheduler.Event {
        diskHealth.writeFailed()
        // A hold shorter than the status thread's second is shown too; that thread releases
        // what was held once the spool is back.
        metrics.setHeldElsewhere(true)
        heldStarts.insert(task.id)
        let settings = policy.withLock { $0.retry }
        let delay = RetryPolicy.backoff(afterAttempts: dropped == nil ? 64 : max(4, task.history.attempts.count), settings: settings, random: random())
        let seconds = LogValue("\((delay * 100).rounded() / 100)")
        if let dropped {
            logger.error("\(dropped) is not written: the spool's folders lead outside it; the request stays in outgoing and is sent again once they are back",
                         id: task.id, ["reason": LogValue(problem), "retry_in_seconds": seconds])
        } else {
            logger.debug("held: the spool's folders lead outside it", id: task.id, ["reason": LogValue(problem), "retry_in_seconds": seconds])
        }
        report(TaskReport(id: task.id, outcome: .deferred(reason: problem)))
        var next = task
        next.history.notBefore = Date().addingTimeInterval(delay)
        return .retry(next, at: Date().timeIntervalSince1970 + delay)
    }

    /// Removes the result's temporary of an attempt that produced no result, then closes it:
    /// closed first, sshfs can keep it as `incoming/.fuse_hidden*` (`FileDescriptor.unlinkThenClose`).
    func discardSpill(_ outcome: AttemptOutcome) {
        guard let stream = outcome.stream, let spill = stream.spill?.take() else { return }
        do {
            try spill.unlinkThenClose(stream.spillPath)
        } catch {
            logger.warning("removing a leftover failed; carrying on", ["reason": "\(error)"])
        }
    }
}
