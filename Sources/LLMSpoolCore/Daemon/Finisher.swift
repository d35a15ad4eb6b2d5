import Foundation
import Glibc
import Synchronization

/// Writes the outcome of each attempt to the spool, on the worker pool, and decides
/// whether a failed attempt is tried again. The order of every step is what makes a crash
/// at any instant leave one outcome, never two (see `TaskRecord` for the roll-forward):
///
/// Success: plain answer: fsync `.partial`; stream: finish the result's hidden temporary
/// (the event loop has been writing the text of a long answer there as it arrived) and
/// fsync it; the `.partial` is kept as the `.sse` copy without an fsync of its own -> commit:
/// the task record says `done` with the result's inode (durable) -> (stream: rename
/// `.partial` to `.sse`) -> rename into `incoming/<id>.json` -> fsync `incoming` -> unlink
/// the request -> fsync `outgoing`.
///
/// Final failure: commit: the task record says `failed` and carries the error record
/// (durable) -> write `failed/<id>.error.json` durably -> rename the request to
/// `failed/<id>.json` -> fsync `failed` and `outgoing` -> unlink `.partial`.
///
/// Retry: unlink `.partial` -> the task record (attempts, next-attempt time) durably ->
/// the scheduler holds the task, without a slot, until it is due.
public final class Finisher: Sendable {
    /// Largest provider error body kept in a record.
    static let providerBodyLimit = 64 * 1024
    /// Largest plain answer checked for JSON validity.
    static let plainAnswerLimit = 256 * 1024 * 1024

    /// What a configuration reload may change.
    struct Policy: Sendable {
        var retry: RetrySettings
        var endpointCount: Int
    }

    private let layout: SpoolLayout
    private let logger: Logger
    private let policy: Mutex<Policy>
    private let random: @Sendable () -> Double
    private let report: @Sendable (TaskReport) -> Void
    private let metrics: Metrics
    /// Set when daemons share the spool: nothing is published without the lease.
    private let leases: LeaseManager?

    public init(layout: SpoolLayout, logger: Logger, retry: RetrySettings, endpointCount: Int, metrics: Metrics = Metrics(), leases: LeaseManager? = nil,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                report: @escaping @Sendable (TaskReport) -> Void) {
        self.metrics = metrics
        self.leases = leases
        self.layout = layout
        self.logger = logger
        self.policy = Mutex(Policy(retry: retry, endpointCount: max(1, endpointCount)))
        self.random = random
        self.report = report
    }

    public func reconfigure(retry: RetrySettings, endpointCount: Int) {
        policy.withLock { $0 = Policy(retry: retry, endpointCount: max(1, endpointCount)) }
    }

    /// A success whose files are written, fsynced and recorded, waiting for the folder
    /// fsyncs it shares with the other successes of its batch.
    public struct PreparedSuccess: Sendable {
        let task: TaskDescriptor
        let outcome: AttemptOutcome
        /// The `.partial` (plain answer) or the result's temporary (stream).
        let source: String
        let streamed: Bool
        let usage: [String: Int]?
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
            if outcome.partialFD >= 0 { Syscall.close(outcome.partialFD) }
            // Only closed: the path may be the other daemon's temporary by now.
            if let spill = outcome.stream?.spillFD, spill >= 0 { Syscall.close(spill) }
            logger.info("attempt discarded: another daemon holds the request now", id: id)
            return .ended(.finalized(id: id))
        }
        let partial = layout.partial(id)
        let verdict = judge(outcome, partial: partial)
        var task = outcome.task
        var entry = AttemptEntry(startedAt: outcome.startedAt, endedAt: outcome.endedAt, endpoint: outcome.endpointName,
                                 outcome: "ok", bytesSent: outcome.bytesSent, bytesReceived: outcome.bytesReceived)
        if case .response(let status) = outcome.ending { entry.httpStatus = status }
        switch verdict {
        case .cancelled:
            closePartial(outcome.partialFD)
            discardSpill(outcome)
            try? Syscall.unlinkIfPresent(partial)
            entry.outcome = "cancelled"
            task.history.attempts.append(entry)
            // The request may have left because another daemon answered it: its record stays.
            if LeaseRules.mayRecordCancelled(over: TaskRecord.load(layout, id: id)?.status) {
                try? TaskRecord(id: id, status: .cancelled, request: task.identity, history: task.history).write(layout, durable: false)
            }
            logger.info("cancelled: the request left outgoing while in flight", id: id, ["bytes_received": "\(outcome.bytesReceived)"])
            report(TaskReport(id: id, outcome: .cancelled))
            return .ended(.finalized(id: id))
        case .success(let assembled, let usage):
            task.history.attempts.append(entry)
            do {
                let source = try writeSuccess(outcome, history: task.history, assembled: assembled, usage: usage)
                return .success(PreparedSuccess(task: task, outcome: outcome, source: source, streamed: assembled != nil, usage: usage))
            } catch {
                return .ended(postpone(task, because: "publishing the result failed: \(error)"))
            }
        case .failure(let failure):
            closePartial(outcome.partialFD)
            discardSpill(outcome)
            try? Syscall.unlinkIfPresent(partial)
            entry.outcome = failure.kind.rawValue
            entry.message = failure.message
            entry.timer = failure.timer?.rawValue
            task.history.attempts.append(entry)
            let now = Date()
            let policy = self.policy.withLock { $0 }
            var decision: RetryPolicy.Decision
            if failure.kind == .disk {
                // A full disk is the machine's trouble, not the request's: it does not use
                // up attempts, only the request's lifetime.
                let delay = RetryPolicy.backoff(afterAttempts: task.history.attempts.count, settings: policy.retry, random: random())
                decision = now.timeIntervalSince(task.history.firstSeen) + delay <= policy.retry.maxLifetimeSeconds
                    ? .retry(afterSeconds: delay, reason: "disk")
                    : .giveUp(reason: "the disk stayed full past max_lifetime_seconds")
            } else {
                let counted = task.history.attempts.filter { $0.outcome != AttemptFailure.Kind.disk.rawValue }.count
                decision = RetryPolicy.decide(failure, headers: outcome.headers, attempts: counted,
                                              firstSeen: task.history.firstSeen, now: now, settings: policy.retry, random: random())
            }
            switch decision {
            case .retry(let delay, _):
                let at = now.addingTimeInterval(delay)
                task.history.notBefore = at
                if failure.kind != .disk { task.history.preferredEndpoint = (outcome.endpointIndex + 1) % policy.endpointCount }
                do {
                    try TaskRecord(id: id, status: .active, request: task.identity, history: task.history).write(layout, durable: true)
                } catch {
                    logger.warning("cannot record the attempt; it is kept in memory only", id: id, ["reason": "\(error)"])
                }
                metrics.retry(failure.kind.rawValue)
                logger.info("attempt failed; will retry", id: id, ["attempt": "\(task.history.attempts.count)", "kind": failure.kind.rawValue,
                                                                   "reason": failure.message, "retry_in_seconds": String(format: "%.2f", delay)])
                return .ended(.retry(task, at: at.timeIntervalSince1970))
            case .giveUp(let reason):
                var final = failure
                if reason != "not retryable" {
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
        guard claimForEnding(id, "a rejection") else { return .finalized(id: id) }
        let event = rejectHoldingLease(id: id, requestPath: requestPath, problem: problem)
        leases?.release(id, ended: Finisher.endsTask(event))
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
            logger.warning("cannot claim the request; will look again", id: id, ["reason": reason])
            return false
        }
    }

    private func rejectHoldingLease(id: String, requestPath: String, problem: RequestProblem) -> Scheduler.Event {
        let task = TaskDescriptor(id: id, requestPath: requestPath, summary: RequestSummary(model: "", stream: false, size: 0))
        let failure = AttemptFailure(.invalidRequest, "\(requestPath): \(problem.description)")
        let event = fail(task: task, failure: failure, problem: problem, commit: false)
        // A rejection that could not be written is found again by the next scan.
        if case .retry = event { return .finalized(id: id) }
        return event
    }

    /// Completes the clean-up of a task whose record says it ended before a restart.
    public func completeEnded(id: String, requestPath: String) -> Scheduler.Event {
        guard claimForEnding(id, "the clean-up of an ended task") else { return .finalized(id: id) }
        defer { leases?.release(id, ended: true) }
        guard let record = TaskRecord.load(layout, id: id) else { return .finalized(id: id) }
        do {
            switch record.status {
            case .done:
                try Syscall.unlinkIfPresent(requestPath)
                try Syscall.fsyncDirectory(layout.outgoing)
                logger.info("done (completed after a restart)", id: id, ["result": layout.result(id)])
                report(TaskReport(id: id, outcome: .succeeded(resultPath: layout.result(id))))
            case .failed:
                if !Syscall.exists(layout.errorRecord(id)), let bytes = record.errorRecord {
                    try DurableFile.write(bytes, to: layout.errorRecord(id), mode: layout.fileMode)
                }
                try moveToFailed(id: id, requestPath: requestPath)
                logger.warning("failed (completed after a restart)", id: id, ["record": layout.errorRecord(id)])
                report(TaskReport(id: id, outcome: .failed(recordPath: layout.errorRecord(id), kind: .invalidRequest,
                                                           message: "completed after a restart")))
            case .active, .cancelled:
                break
            }
        } catch {
            logger.error("cannot complete the clean-up; will try again on the next scan", id: id, ["reason": "\(error)"])
        }
        return .finalized(id: id)
    }

    /// A queued or waiting request was withdrawn by deleting its file.
    public func withdrawn(id: String) {
        // On a shared spool a request usually leaves because another daemon answered it.
        guard claimForEnding(id, "a withdrawal") else { return }
        defer { leases?.release(id, ended: true) }
        var record = TaskRecord.load(layout, id: id) ?? TaskRecord(id: id, status: .cancelled, request: nil, history: TaskHistory(firstSeen: Date()))
        if LeaseRules.mayRecordCancelled(over: record.status) {
            record.status = .cancelled
            try? record.write(layout, durable: false)
        }
        logger.info("cancelled: the request was removed before it started", id: id)
        report(TaskReport(id: id, outcome: .cancelled))
    }

    private func judge(_ outcome: AttemptOutcome, partial: String) -> AttemptJudge.Verdict {
        if let verdict = AttemptJudge.judgeEnding(outcome.ending, bodyPrefix: {
            (try? FileReader.prefix(path: partial, limit: Finisher.providerBodyLimit)) ?? []
        }) {
            return verdict
        }
        guard case .response(let status) = outcome.ending else { return .cancelled }
        do {
            if AttemptJudge.isEventStream(requested: outcome.task.summary.stream, headers: outcome.headers) {
                // Assembled by the event loop as the events arrived: the answer is not read again.
                guard let stream = outcome.stream else {
                    return .failure(AttemptFailure(.incompleteStream, "the stream was not assembled", httpStatus: status))
                }
                return AttemptJudge.judgeStream(status: status, verdict: stream.verdict)
            }
            let body = try FileReader.prefix(path: partial, limit: Finisher.plainAnswerLimit)
            return AttemptJudge.judgePlain(status: status, body: body)
        } catch {
            return .failure(AttemptFailure(.disk, "reading the answer back failed: \(error)"))
        }
    }

    /// The request's own part of a success: the result's bytes durable, then the task
    /// record that commits to them (durable; its folder is fsynced by `commit`). Returns the
    /// file to rename into `incoming`.
    private func writeSuccess(_ outcome: AttemptOutcome, history: TaskHistory, assembled: AssembledCompletion?, usage: [String: Int]?) throws -> String {
        let id = outcome.task.id
        let partial = layout.partial(id)
        var source = partial
        if let assembled {
            closePartial(outcome.partialFD)
            source = SpoolLayout.temporary(for: layout.result(id))
            var fd = outcome.stream?.spillFD ?? -1
            defer { if fd >= 0 { Syscall.close(fd) } }
            if fd < 0 {
                try Syscall.unlinkIfPresent(source)
                fd = try Syscall.open(source, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: layout.fileMode)
            }
            try Syscall.writeAll(fd, assembled.head, path: source)
            try Syscall.writeAll(fd, assembled.content, path: source)
            try Syscall.writeAll(fd, assembled.tail, path: source)
            try Syscall.fsync(fd, path: source)
        } else {
            if let spill = outcome.stream?.spillFD, spill >= 0 { Syscall.close(spill) }
            // A transfer short of descriptors wrote the `.partial` by name; it is opened again to be fsynced.
            let fd = outcome.partialFD >= 0 ? outcome.partialFD : try Syscall.open(partial, O_RDONLY | O_NOFOLLOW)
            defer { Syscall.close(fd) }
            try Syscall.fsync(fd, path: partial)
        }
        let inode = UInt64(try Syscall.lstat(source).st_ino)
        let record = TaskRecord(id: id, status: .done, request: outcome.task.identity, history: history, endpoint: outcome.endpointName,
                                usage: usage, resultInode: inode)
        try DurableFile.write(record.encoded(), to: layout.taskRecord(id), mode: layout.fileMode, syncDirectory: false)
        return source
    }

    /// Publishes a batch of prepared successes with one fsync per folder for all of them:
    /// `state` (the records become the commit points), then the renames into `incoming`
    /// and its fsync, then the requests' unlinks and the fsync of `outgoing`. The order of
    /// the steps is that of a single success; only the folder fsyncs are shared. Returns
    /// one event per success, in order.
    public func commit(_ batch: [PreparedSuccess]) -> [Scheduler.Event] {
        var failed: [Int: String] = [:]
        func step(_ indices: some Sequence<Int>, _ body: (PreparedSuccess) throws -> Void) {
            for index in indices where failed[index] == nil {
                do { try body(batch[index]) } catch { failed[index] = "\(error)" }
            }
        }
        func syncFolder(_ folder: String) {
            do {
                try Syscall.fsyncDirectory(folder)
            } catch {
                for index in batch.indices where failed[index] == nil { failed[index] = "\(error)" }
            }
        }
        syncFolder(layout.state)
        step(batch.indices) { prepared in
            let id = prepared.task.id
            if prepared.streamed { try Syscall.rename(layout.partial(id), layout.rawStream(id)) }
            try Syscall.rename(prepared.source, layout.result(id))
        }
        syncFolder(layout.incoming)
        var outgoingFolders: Set<String> = []
        step(batch.indices) { prepared in
            try Syscall.unlinkIfPresent(prepared.task.requestPath)
            outgoingFolders.insert(DurableFile.directory(of: prepared.task.requestPath))
        }
        for folder in outgoingFolders.sorted() { syncFolder(folder) }
        return batch.indices.map { index in
            let prepared = batch[index]
            let id = prepared.task.id
            if let reason = failed[index] {
                leases?.release(id, ended: false)
                return postpone(prepared.task, because: "publishing the result failed: \(reason)")
            }
            if let usage = prepared.usage { metrics.usage(usage) }
            let outcome = prepared.outcome
            let seconds = String(format: "%.3f", outcome.endedAt.timeIntervalSince(outcome.startedAt))
            logger.info("done", id: id, ["result": layout.result(id), "endpoint": outcome.endpointName,
                                         "attempts": "\(prepared.task.history.attempts.count)", "bytes": "\(outcome.bytesReceived)",
                                         "seconds": seconds])
            leases?.release(id, ended: true)
            report(TaskReport(id: id, outcome: .succeeded(resultPath: layout.result(id))))
            return .finalized(id: id)
        }
    }

    private func fail(task: TaskDescriptor, failure: AttemptFailure, problem: RequestProblem?, commit: Bool) -> Scheduler.Event {
        let id = task.id
        let recordPath = layout.errorRecord(id)
        let bytes = ErrorRecord.encode(id: id, failure: failure, history: task.history, problem: problem, requestFile: layout.failedRequest(id),
                                       originalName: layout.loadOriginalName(id))
        do {
            if commit {
                try TaskRecord(id: id, status: .failed, request: task.identity, history: task.history, errorRecord: bytes).write(layout, durable: true)
            }
            try DurableFile.write(bytes, to: recordPath, mode: layout.fileMode)
            try moveToFailed(id: id, requestPath: task.requestPath)
            try? Syscall.unlinkIfPresent(layout.partial(id))
        } catch {
            return postpone(task, because: "writing the failure record failed: \(error)")
        }
        logger.warning("failed", id: id, ["kind": failure.kind.rawValue, "reason": failure.message, "record": recordPath])
        report(TaskReport(id: id, outcome: .failed(recordPath: recordPath, kind: failure.kind, message: failure.message)))
        return .finalized(id: id)
    }

    private func moveToFailed(id: String, requestPath: String) throws {
        do {
            try Syscall.rename(requestPath, layout.failedRequest(id))
        } catch let error as SystemError where error.errno == ENOENT {
            logger.warning("the request vanished before it could be moved to failed", id: id)
        }
        try Syscall.fsyncDirectory(layout.failed)
        try Syscall.fsyncDirectory(DurableFile.directory(of: requestPath))
    }

    /// The outcome could not be written (a full disk, most often): nothing half-done is
    /// left, the request stays in `outgoing`, and the task is tried again later.
    private func postpone(_ task: TaskDescriptor, because reason: String) -> Scheduler.Event {
        try? Syscall.unlinkIfPresent(layout.partial(task.id))
        try? Syscall.unlinkIfPresent(SpoolLayout.temporary(for: layout.result(task.id)))
        let delay = RetryPolicy.backoff(afterAttempts: max(1, task.history.attempts.count), settings: policy.withLock { $0.retry }, random: random())
        logger.error("outcome not written; the request stays in outgoing and is tried again", id: task.id,
                     ["reason": reason, "retry_in_seconds": String(format: "%.2f", delay)])
        report(TaskReport(id: task.id, outcome: .deferred(reason: reason)))
        var next = task
        next.history.notBefore = Date().addingTimeInterval(delay)
        return .retry(next, at: Date().timeIntervalSince1970 + delay)
    }

    /// Closes and removes the result's temporary of an attempt that produced no result.
    private func discardSpill(_ outcome: AttemptOutcome) {
        guard let stream = outcome.stream, stream.spillFD >= 0 else { return }
        Syscall.close(stream.spillFD)
        try? Syscall.unlinkIfPresent(stream.spillPath)
    }

    private func closePartial(_ fd: Int32) {
        if fd >= 0 { Syscall.close(fd) }
    }
}
