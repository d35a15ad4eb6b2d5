import Foundation
import Glibc

extension Finisher {
    /// The end of one attempt of a batch's line: judged as a request's, retried by the same
    /// rules, but its outcome is an output line committed by the `BatchRunner` (no result
    /// file, no task record, no hook of its own). The answer is the bytes the engine held,
    /// or, for one that outgrew them, its `.partial`; the answer's files are removed here.
    func finishLine(_ outcome: AttemptOutcome, _ line: BatchLineRef) -> Scheduler.Event {
        let id = outcome.task.id
        let partial = layout.partial(id)
        giveNamesAgain(outcome, partial: partial)
        // A line's answer goes into the batch's output, not out under its name: the bytes
        // received are the ones to judge and keep, whatever the name leads to now.
        let verdict = judge(outcome, partial: partial, throughHeld: true)
        let runner = batches.withLock { $0 }
        let customID = outcome.task.summary.customID
        var result: BatchLineResult
        var usage: [String: Int]?
        defer {
            // An answer held in memory made no `.partial` (`BatchLineAnswer`). Removed before
            // its descriptor closes (`FileDescriptor.unlinkThenClose`).
            if outcome.heldBody == nil {
                logger.bestEffort("removing a leftover", id: id) { try Syscall.unlinkIfPresent(partial) }
            }
            outcome.partial?.discard()
            discardSpill(outcome)
        }
        switch verdict {
        case .cancelled:
            result = .cancelled
        case .success(let assembled, let counts):
            usage = counts
            var status = 200
            if case .response(let code) = outcome.ending { status = code }
            let requestID = ProviderRequestID.from(headers: outcome.headers, redaction: secretRedaction)
            do {
                var body: [UInt8]
                if let assembled {
                    body = []
                    if let stream = outcome.stream, stream.spill?.isHeld == true {
                        body = try FileReader.prefix(path: stream.spillPath, limit: Finisher.plainAnswerLimit)
                    }
                    body += assembled.head + assembled.content + assembled.tail
                } else if let held = outcome.heldBody {
                    body = held
                } else {
                    body = try answerBytes(outcome, partial: partial, throughHeld: true)
                }
                result = .succeeded(status: status, requestID: requestID, body: body)
            } catch {
                result = .failed(code: AttemptFailure.Kind.disk.rawValue, message: "reading the answer back failed: \(error)", status: status, body: nil)
            }
        case .failure(let failure):
            var task = outcome.task
            var entry = AttemptEntry(startedAt: outcome.startedAt, endedAt: outcome.endedAt, endpoint: outcome.endpointName,
                                     outcome: failure.kind.rawValue, message: failure.message, httpStatus: failure.httpStatus)
            entry.bytesSent = outcome.bytesSent
            task.history.attempts.append(entry)
            let now = Date()
            let policy = self.policy.withLock { $0 }
            switch RetryPolicy.plan(failure, headers: outcome.headers, history: task.history, endpointIndex: outcome.endpointIndex,
                                    endpointCount: policy.endpointCount, carriers: policy.carriers(of: task), now: now, settings: policy.retry,
                                    random: random()) {
            case .retry where runner?.isStopping(line.batch) == true:
                // A cancelled batch's line is not sent again, however long its retry would wait.
                result = .cancelled
            case .retry(let delay, let endpoint, _):
                task.history.notBefore = now.addingTimeInterval(delay)
                task.history.preferredEndpoint = endpoint
                logger.debug("batch line failed; will retry", id: id, ["kind": LogValue(failure.kind.rawValue), "reason": LogValue(failure.message)])
                guard let runner else { return .retry(task, at: now.timeIntervalSince1970 + delay) }
                // The line has no task record: its attempts go into the batch's journal, and
                // the runner hands the retry to the scheduler once they are durable; the
                // task stays finishing until then, and the tick changes nothing.
                runner.lineRetrying(line, task: task, at: now.timeIntervalSince1970 + delay)
                return .tick
            case .giveUp(let reason):
                if case .lifetimeExceeded = reason {
                    result = .expired
                } else if reason == .expiredNotLive {
                    // The remote batch's window passed and deferred_expired is fail.
                    result = .expired
                } else {
                    let message = reason == .notRetryable ? failure.message : "\(failure.message); \(reason)"
                    result = .failed(code: failure.kind.rawValue, message: message, status: failure.httpStatus, body: failure.providerBody)
                }
            }
        }
        runner?.lineEnded(line, customID: customID, result: result, usage: usage,
                          lane: outcome.remoteBatch == nil ? .live : .batch, endpoint: outcome.endpointName)
        return .finalized(id: id)
    }

    /// A line the background lane carried in a group whose claim another daemon took (the
    /// lane posted `.laneEnded`): that group's answer will not come here. It goes back to
    /// its batch as a failed attempt's line does (`BatchRunner.lineRetrying`), with no
    /// attempt of its own: the runner retries it, or ends it when the batch no longer runs
    /// here (its claim lost too). The event to post, or nil when the runner posts it.
    func lineHandedBack(_ task: TaskDescriptor) -> Scheduler.Event? {
        guard let line = BatchLineRef(id: task.id), let runner = batches.withLock({ $0 }) else { return .finalized(id: task.id) }
        logger.info("the line's group is another daemon's now; it goes back to its batch", id: task.id)
        runner.lineRetrying(line, task: task, at: Date().timeIntervalSince1970)
        return nil
    }
}
