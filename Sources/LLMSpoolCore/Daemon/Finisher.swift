import Foundation
import Glibc

/// Writes the outcome of each attempt to the spool, on the worker pool. The order of
/// every step is what makes a crash at any instant leave one outcome, never two:
///
/// Success: fsync `.partial` -> (stream: write the assembled result to a hidden temporary
/// and fsync it, rename `.partial` to `.sse`) -> rename into `incoming/<id>.json` ->
/// fsync `incoming` -> unlink the request -> fsync `outgoing`. Until the request is gone,
/// a crash leaves it in `outgoing` and the task runs again from zero; the result is
/// replaced by rename, never appended to.
///
/// Failure: write `failed/<id>.error.json` durably -> rename the request to
/// `failed/<id>.json` -> fsync `failed` and `outgoing` -> unlink `.partial`.
public final class Finisher: Sendable {
    /// Largest provider error body kept in a record.
    static let providerBodyLimit = 64 * 1024
    /// Largest plain answer checked for JSON validity.
    static let plainAnswerLimit = 256 * 1024 * 1024

    private let layout: SpoolLayout
    private let logger: Logger
    private let report: @Sendable (TaskReport) -> Void

    public init(layout: SpoolLayout, logger: Logger, report: @escaping @Sendable (TaskReport) -> Void) {
        self.layout = layout
        self.logger = logger
        self.report = report
    }

    /// Publishes an attempt's outcome. Returns once the spool reflects it.
    public func finish(_ outcome: AttemptOutcome) {
        let id = outcome.task.id
        let partial = layout.partial(id)
        let verdict = judge(outcome, partial: partial)
        switch verdict {
        case .cancelled:
            closePartial(outcome.partialFD, sync: false)
            try? Syscall.unlinkIfPresent(partial)
            logger.info("cancelled: the request left outgoing while in flight", id: id, ["bytes_received": "\(outcome.bytesReceived)"])
            report(TaskReport(id: id, outcome: .cancelled))
        case .success(let assembled):
            do {
                try publishSuccess(outcome, assembled: assembled)
                let seconds = String(format: "%.3f", outcome.endedAt.timeIntervalSince(outcome.startedAt))
                logger.info("done", id: id, ["result": layout.result(id), "bytes": "\(outcome.bytesReceived)", "seconds": seconds])
                report(TaskReport(id: id, outcome: .succeeded(resultPath: layout.result(id))))
            } catch {
                defer_(id: id, partial: partial, because: "publishing the result failed: \(error)")
            }
        case .failure(let failure):
            closePartial(outcome.partialFD, sync: false)
            fail(id: id, requestPath: outcome.task.requestPath, failure: failure, attempt: outcome)
        }
    }

    /// Fails a request that was never sent (bad file, bad name).
    public func reject(id: String, requestPath: String, problem: RequestProblem) {
        var failure = AttemptFailure(.invalidRequest, "\(requestPath): \(problem.description)")
        failure.providerBody = nil
        fail(id: id, requestPath: requestPath, failure: failure, attempt: nil, problem: problem)
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
                var parser = SSEParser()
                var assembler = StreamAssembler()
                try FileReader.forEachChunk(path: partial) { chunk in
                    parser.feed(chunk) { assembler.consume($0) }
                }
                parser.finish { assembler.consume($0) }
                return AttemptJudge.judgeStream(status: status, verdict: assembler.verdict())
            }
            let body = try FileReader.prefix(path: partial, limit: Finisher.plainAnswerLimit)
            return AttemptJudge.judgePlain(status: status, body: body)
        } catch {
            return .failure(AttemptFailure(.disk, "reading the answer back failed: \(error)"))
        }
    }

    private func publishSuccess(_ outcome: AttemptOutcome, assembled: [UInt8]?) throws {
        let id = outcome.task.id
        let partial = layout.partial(id)
        let result = layout.result(id)
        try Syscall.fsync(outcome.partialFD, path: partial)
        Syscall.close(outcome.partialFD)
        if let assembled {
            let temporary = SpoolLayout.temporary(for: result)
            let fd = try Syscall.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
            defer { Syscall.close(fd) }
            try Syscall.writeAll(fd, assembled, path: temporary)
            try Syscall.fsync(fd, path: temporary)
            try Syscall.rename(partial, layout.rawStream(id))
            try Syscall.rename(temporary, result)
        } else {
            try Syscall.rename(partial, result)
        }
        try Syscall.fsyncDirectory(layout.incoming)
        try Syscall.unlinkIfPresent(outcome.task.requestPath)
        try Syscall.fsyncDirectory(layout.outgoing)
    }

    private func fail(id: String, requestPath: String, failure: AttemptFailure, attempt: AttemptOutcome?, problem: RequestProblem? = nil) {
        let recordPath = layout.errorRecord(id)
        let record = ErrorRecord(id: id, failure: failure, attempt: attempt, problem: problem, requestFile: layout.failedRequest(id))
        do {
            try DurableFile.write(record.encoded(), to: recordPath)
            do {
                try Syscall.rename(requestPath, layout.failedRequest(id))
            } catch let error as SystemError where error.errno == ENOENT {
                logger.warning("the request vanished before it could be moved to failed", id: id)
            }
            try Syscall.fsyncDirectory(layout.failed)
            try Syscall.fsyncDirectory(DurableFile.directory(of: requestPath))
            try? Syscall.unlinkIfPresent(layout.partial(id))
            logger.warning("failed", id: id, ["kind": failure.kind.rawValue, "reason": failure.message, "record": recordPath])
            report(TaskReport(id: id, outcome: .failed(recordPath: recordPath, kind: failure.kind, message: failure.message)))
        } catch {
            defer_(id: id, partial: layout.partial(id), because: "writing the failure record failed: \(error)")
        }
    }

    /// The outcome could not be written (a full disk, most often): the request stays in
    /// `outgoing` and is tried again by a later scan. No half result is left behind.
    private func defer_(id: String, partial: String, because reason: String) {
        try? Syscall.unlinkIfPresent(partial)
        try? Syscall.unlinkIfPresent(SpoolLayout.temporary(for: layout.result(id)))
        logger.error("outcome not written; the request stays in outgoing for a later attempt", id: id, ["reason": reason])
        report(TaskReport(id: id, outcome: .deferred(reason: reason)))
    }

    private func closePartial(_ fd: Int32, sync: Bool) {
        guard fd >= 0 else { return }
        if sync { try? Syscall.fsync(fd) }
        Syscall.close(fd)
    }
}
