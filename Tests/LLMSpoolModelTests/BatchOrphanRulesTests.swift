import Testing
@testable import LLMSpoolModel

/// A batch journal left without a runner is ended by a daemon that is running, not only at start.
@Suite struct BatchOrphanRulesTests {
    @Test func aJournalWhoseInputIsThereIsLeft() {
        for running in [false, true] {
            for claim: BatchClaimRules.Claim? in [nil, .claimed, .heldElsewhere, .failed("EIO")] {
                #expect(BatchOrphanRules.action(inputPresent: true, runningHere: running, claim: claim) == .leave)
            }
            #expect(!BatchOrphanRules.needsClaim(inputPresent: true, runningHere: running, shared: true))
        }
    }

    @Test func aBatchRunHereIsEndedByItsCancellationNotBySweeping() {
        for claim: BatchClaimRules.Claim? in [nil, .claimed, .heldElsewhere] {
            #expect(BatchOrphanRules.action(inputPresent: false, runningHere: true, claim: claim) == .leave)
        }
        #expect(!BatchOrphanRules.needsClaim(inputPresent: false, runningHere: true, shared: true))
    }

    @Test func anOrphanIsEndedUnderItsClaim() {
        #expect(BatchOrphanRules.needsClaim(inputPresent: false, runningHere: false, shared: true))
        #expect(!BatchOrphanRules.needsClaim(inputPresent: false, runningHere: false, shared: false), "alone, no claim is asked for")
        #expect(BatchOrphanRules.action(inputPresent: false, runningHere: false, claim: nil) == .end)
        #expect(BatchOrphanRules.action(inputPresent: false, runningHere: false, claim: .claimed) == .end)
        #expect(BatchOrphanRules.action(inputPresent: false, runningHere: false, claim: .heldElsewhere) == .lookAgain,
                "another daemon ends it now, or is cancelling it")
        #expect(BatchOrphanRules.action(inputPresent: false, runningHere: false, claim: .failed("EIO")) == .lookAgain)
    }

    @Test func sweepsComeAsOftenAsAHeldBatchIsLookedAt() {
        #expect(BatchOrphanRules.sweepSeconds(leaseSeconds: 3, shared: true) == 1)
        #expect(BatchOrphanRules.sweepSeconds(leaseSeconds: 30, shared: true) == 10)
        #expect(BatchOrphanRules.sweepSeconds(leaseSeconds: 1e12, shared: true) == 60, "no lease time makes it rarer than once a minute")
        #expect(BatchOrphanRules.sweepSeconds(leaseSeconds: .nan, shared: true) == 1)
        #expect(BatchOrphanRules.sweepSeconds(leaseSeconds: 3, shared: false) == 60)
    }
}
