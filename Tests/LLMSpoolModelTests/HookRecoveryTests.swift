import Testing
@testable import LLMSpoolModel

/// A hook noted as owed runs at the next start when its outcome is published and its
/// request gone; a request still queued reports (or notes) its own; nothing published, no hook.
@Suite struct HookRecoveryTests {
    @Test(arguments: [false, true], [false, true])
    func aQueuedRequestKeepsItsNote(result: Bool, errorRecord: Bool) {
        #expect(HookRecovery.decide(requestPresent: true, resultExists: result, errorRecordExists: errorRecord) == .leaveToTheRequest)
    }

    @Test func aPublishedOutcomeRunsItsHook() {
        #expect(HookRecovery.decide(requestPresent: false, resultExists: true, errorRecordExists: false) == .runOnComplete)
        #expect(HookRecovery.decide(requestPresent: false, resultExists: false, errorRecordExists: true) == .runOnFailure)
        #expect(HookRecovery.decide(requestPresent: false, resultExists: true, errorRecordExists: true) == .runOnComplete,
                "a failure retried to success: the result is the latest outcome")
    }

    @Test func nothingPublishedNothingOwed() {
        #expect(HookRecovery.decide(requestPresent: false, resultExists: false, errorRecordExists: false) == .drop)
    }
}

/// A batch's note: the input still there runs the batch on; a summary runs the hook with
/// its counts, read back from the summary as written.
@Suite struct BatchHookRecoveryTests {
    @Test func theDecisionFollowsWhatTheSpoolHolds() {
        #expect(HookRecovery.decideBatch(inputPresent: true, summaryExists: true, refused: false) == .leaveToTheBatch)
        #expect(HookRecovery.decideBatch(inputPresent: false, summaryExists: true, refused: false) == .runFromSummary)
        #expect(HookRecovery.decideBatch(inputPresent: false, summaryExists: false, refused: true) == .runRefused)
        #expect(HookRecovery.decideBatch(inputPresent: false, summaryExists: false, refused: false) == .drop)
    }

    @Test func aSummaryIsReadBackWithItsCounts() {
        var counts = BatchCounts()
        counts.succeeded = 7
        counts.failed = 2
        counts.expired = 1
        let summary = BatchSummary(name: "b", status: .completed, endpoint: "/v1/chat/completions", total: 10,
                                   counts: counts, createdAt: 1, endedAt: 2, inputFile: "in", outputFile: "out")
        #expect(BatchSummary.end(of: summary.encoded()) == BatchSummary.End(status: "completed", total: 10, completed: 7, failed: 3))
        #expect(BatchSummary.end(of: Array("{}".utf8)) == nil)
        #expect(BatchSummary.end(of: Array(#"{"status": "completed", "request_counts": {"total": "10", "completed": 1, "failed": 0}}"#.utf8)) == nil)
        #expect(BatchSummary.end(of: Array("not json".utf8)) == nil)
    }
}
