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
