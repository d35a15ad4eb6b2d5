import Testing
@testable import LLMSpoolModel

/// Who runs a batch on a shared spool: the holder of its claim, alone; the others look
/// again while it lives, and a daemon that lost the claim writes nothing more.
@Suite struct BatchClaimRulesTests {
    @Test func aBatchsClaimIDIsReservedAndReadBack() {
        #expect(BatchClaimRules.claimID(batch: "eval") == "eval.jsonl")
        #expect(BatchClaimRules.batchName(ofClaim: "eval.jsonl") == "eval")
        #expect(BatchClaimRules.batchName(ofClaim: BatchClaimRules.claimID(batch: "a.jsonl")) == "a.jsonl")
        // A request's id is never a batch's claim.
        #expect(BatchClaimRules.batchName(ofClaim: "eval") == nil)
        #expect(BatchClaimRules.batchName(ofClaim: ".jsonl") == nil)
        #expect(BatchClaimRules.batchName(ofClaim: "eval.json") == nil)
        if case .request = RequestName.classify("eval.jsonl.json") { Issue.record("a request file has a batch's claim id") }
    }

    @Test func withoutLeasesTheBatchIsThisDaemonsAlone() {
        #expect(BatchClaimRules.intake(claim: nil, leaseSeconds: 30) == .run)
        #expect(BatchClaimRules.commit(stillMine: nil) == .commit)
    }

    @Test func onlyTheHolderOfTheClaimRunsIt() {
        #expect(BatchClaimRules.intake(claim: .claimed, leaseSeconds: 30) == .run)
        #expect(BatchClaimRules.intake(claim: .heldElsewhere, leaseSeconds: 30) == .leave(lookAgainAfter: 10))
        #expect(BatchClaimRules.intake(claim: .failed("EIO"), leaseSeconds: 30) == .retry(after: 10, reason: "EIO"))
    }

    @Test(arguments: [(30.0, 10.0), (1.5, 1.0), (600.0, 60.0), (0.0, 1.0), (-5.0, 1.0), (Double.nan, 1.0), (Double.infinity, 1.0)] as [(Double, Double)])
    func theOthersLookAgainAsOftenAsClaimsAreRenewedWithinBounds(lease: Double, wait: Double) {
        #expect(BatchClaimRules.lookAgainSeconds(leaseSeconds: lease) == wait)
    }

    @Test func aDaemonThatLostTheClaimCommitsNothing() {
        #expect(BatchClaimRules.commit(stillMine: true) == .commit)
        #expect(BatchClaimRules.commit(stillMine: false) == .abandon)
    }

    /// Asked only once the batch runs (a declined one: `BatchRunnerLaneAdoptionTests`).
    @Test func aDeadDaemonsGroupsAreAdoptedOnlyForABatchTakenOverOrResumed() {
        #expect(BatchClaimRules.adoptsLaneGroups(tookOver: true, resumed: true))
        #expect(BatchClaimRules.adoptsLaneGroups(tookOver: true, resumed: false))
        #expect(BatchClaimRules.adoptsLaneGroups(tookOver: false, resumed: true), "its earlier runner stopped cleanly")
        #expect(!BatchClaimRules.adoptsLaneGroups(tookOver: false, resumed: false), "a new batch: no line of it was ever grouped")
    }

    @Test func anEndedBatchLeavesATombstoneAndAStopLeavesItFree() {
        #expect(BatchClaimRules.releaseEnds(batchEnded: true))
        #expect(!BatchClaimRules.releaseEnds(batchEnded: false))
    }

    @Test func aBatchWhoseClaimWasLostRunsHereAgainOnlyOnceItsLinesInFlightAreReported() {
        #expect(BatchClaimRules.mayRunAgain(outstanding: 0))
        #expect(!BatchClaimRules.mayRunAgain(outstanding: 1))
        #expect(!BatchClaimRules.mayRunAgain(outstanding: 50_000))
    }
}
