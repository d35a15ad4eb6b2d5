import Testing
@testable import LLMSpoolModel

/// Who follows a group's remote batch on a shared spool: the holder of the group's claim,
/// alone; a taker adopts a dead follower's group, a live follower's group is left to it,
/// and a request claimed is judged against the groups recorded.
@Suite struct RemoteGroupClaimsTests {
    @Test func aGroupsClaimIDIsHiddenAndReadBack() {
        let id = RemoteGroupClaims.claimID(group: "g00000000000000ab")
        #expect(id == ".remote.g00000000000000ab")
        #expect(RemoteGroupClaims.group(ofClaim: id) == "g00000000000000ab")
        // No request file has it: names starting with a dot are not requests.
        if case .request = RequestName.classify(id + ".json") { Issue.record("a request file has a group's claim id") }
        #expect(RemoteGroupClaims.group(ofClaim: "g00000000000000ab") == nil)
        #expect(RemoteGroupClaims.group(ofClaim: ".remote.") == nil)
        #expect(RemoteGroupClaims.group(ofClaim: "eval.jsonl") == nil)
        #expect(BatchClaimRules.batchName(ofClaim: id) == nil)
    }

    @Test func withoutLeasesEveryRecordIsThisDaemons() {
        #expect(RemoteGroupClaims.found(state: .polling, claim: nil) == .follow)
        #expect(RemoteGroupClaims.found(state: .intent, claim: nil) == .formAgain)
        #expect(RemoteGroupClaims.found(state: .published, claim: nil) == .formAgain)
    }

    @Test(arguments: RemoteBatchState.allCases)
    func aGroupWhoseClaimIsFreeIsAdoptedWhereItsRecordStands(state: RemoteBatchState) {
        let expected: RemoteGroupClaims.Found = state == .intent || state == .published ? .formAgain : .follow
        #expect(RemoteGroupClaims.found(state: state, claim: .claimed) == expected)
    }

    @Test(arguments: RemoteBatchState.allCases)
    func aGroupALiveDaemonFollowsIsLeftToItWhateverItsState(state: RemoteBatchState) {
        // Even a record that says nothing remote exists: its follower may be uploading.
        #expect(RemoteGroupClaims.found(state: state, claim: .heldElsewhere) == .leave)
        #expect(RemoteGroupClaims.found(state: state, claim: .failed("EIO")) == .retry(reason: "EIO"))
    }

    @Test func aGroupCarryingLinesOfABatchRunElsewhereIsLeftToThatBatchsRunner() {
        #expect(RemoteGroupClaims.found(state: .polling, claim: .claimed, runsItsLines: false) == .leaveToBatchRunner)
        #expect(RemoteGroupClaims.found(state: .polling, claim: .claimed, runsItsLines: true) == .follow)
        // Nothing remote: whoever finds it removes the record, and the lines are grouped again.
        #expect(RemoteGroupClaims.found(state: .intent, claim: .claimed, runsItsLines: false) == .formAgain)
        #expect(RemoteGroupClaims.found(state: .polling, claim: .heldElsewhere, runsItsLines: true) == .leave)
        // Alone on the spool, the daemon runs every batch.
        #expect(RemoteGroupClaims.found(state: .polling, claim: nil, runsItsLines: false) == .follow)
    }

    /// A batch's lines are run here when its runner runs it, not when it merely holds its
    /// claim; lines of a batch whose input is gone are discarded by whoever follows the group.
    @Test func theLinesOfABatchAreRunHereOnlyWhenItsRunnerRunsItOrItsInputIsGone() {
        #expect(RemoteGroupClaims.runsLines(runHere: true, inputPresent: true))
        #expect(!RemoteGroupClaims.runsLines(runHere: false, inputPresent: true))
        #expect(RemoteGroupClaims.runsLines(runHere: false, inputPresent: false))
        #expect(RemoteGroupClaims.runsLines(runHere: true, inputPresent: false))
    }

    @Test func aLineWaitsWhileAGroupNotFollowedHereCarriesLinesOfItsBatch() {
        #expect(RemoteGroupClaims.line(batchInGroupNotFollowedHere: true) == .wait)
        #expect(RemoteGroupClaims.line(batchInGroupNotFollowedHere: false) == .join)
    }

    /// A line is fed to the group that may carry it, whatever its route, as long as it has
    /// not been tried: live, it would be paid twice. One already tried goes as routed.
    @Test func aLineFedWhileAGroupNotFollowedHereCarriesItsBatchGoesToThatGroup() {
        #expect(RemoteGroupClaims.lineFed(firstAttempt: true, batchInGroupNotFollowedHere: true) == .toItsGroup)
        #expect(RemoteGroupClaims.lineFed(firstAttempt: true, batchInGroupNotFollowedHere: false) == .asRouted)
        #expect(RemoteGroupClaims.lineFed(firstAttempt: false, batchInGroupNotFollowedHere: true) == .asRouted)
        #expect(RemoteGroupClaims.lineFed(firstAttempt: false, batchInGroupNotFollowedHere: false) == .asRouted)
    }

    @Test func aClaimedRequestGoesBackToItsGroupOrIsLeftToTheGroupsFollower() {
        #expect(RemoteGroupClaims.member(followedHere: true, followedElsewhere: false) == .rejoin)
        #expect(RemoteGroupClaims.member(followedHere: false, followedElsewhere: true) == .leave)
        #expect(RemoteGroupClaims.member(followedHere: false, followedElsewhere: false) == .proceed)
    }

    @Test func theRecordsAreListedAgainAfterATakeoverAndBeforeARequestIsLeft() {
        #expect(RemoteGroupClaims.mustList(tookOver: false, followedElsewhere: false, listedAt: nil, now: 100, every: 10))
        #expect(RemoteGroupClaims.mustList(tookOver: true, followedElsewhere: false, listedAt: 99.9, now: 100, every: 10))
        #expect(RemoteGroupClaims.mustList(tookOver: false, followedElsewhere: true, listedAt: 99.9, now: 100, every: 10))
        #expect(!RemoteGroupClaims.mustList(tookOver: false, followedElsewhere: false, listedAt: 95, now: 100, every: 10))
        #expect(RemoteGroupClaims.mustList(tookOver: false, followedElsewhere: false, listedAt: 90, now: 100, every: 10))
    }

    @Test func onlyTheHolderOfTheClaimRemovesTheRecord() {
        #expect(RemoteGroupClaims.mayRemoveRecord(stillMine: nil))
        #expect(RemoteGroupClaims.mayRemoveRecord(stillMine: true))
        #expect(!RemoteGroupClaims.mayRemoveRecord(stillMine: false))
    }

    @Test func theOthersLookAsOftenAsABatchsClaimIsLookedAt() {
        #expect(RemoteGroupClaims.lookAgainSeconds(leaseSeconds: 30) == 10)
        #expect(RemoteGroupClaims.lookAgainSeconds(leaseSeconds: 3) == 1)
        #expect(RemoteGroupClaims.lookAgainSeconds(leaseSeconds: 600) == 60)
    }

    @Test func aLostGroupsRequestLetsItsClaimGoAndItsLineGoesBackToItsBatch() {
        #expect(RemoteGroupClaims.afterLoss(isLine: false) == .letClaimGo)
        #expect(RemoteGroupClaims.afterLoss(isLine: true) == .backToBatch)
    }

    @Test(arguments: [false, true], [LaneLineFate.Input.same, .changed, .unknown])
    func aGroupOfALostBatchsLinesIsLetGoOnlyWhenNothingElseRunsHereAndItsInputIsTheSame(onlyThoseLines: Bool, input: LaneLineFate.Input) {
        let expected: RemoteGroupClaims.AfterBatchLost = onlyThoseLines && input != .changed ? .letGroupGo : .endItsLines
        #expect(RemoteGroupClaims.afterBatchLost(onlyLinesOfBatchesNotRunHere: onlyThoseLines, input: input) == expected)
    }

    @Test func aStepThatChangesSomethingRemoteIsTakenOnlyUnderTheGroupsClaimUnexpired() {
        let remote: [RemoteBatchMachine.Step] = [.upload, .create, .cancel]
        for step in remote {
            #expect(RemoteGroupClaims.stepGate(step, shared: true, held: true, leaseFilesOnly: true, leaseExpiresAt: 110, now: 100) == .go)
            // Paused past its lease: the keeper has not looked yet.
            #expect(RemoteGroupClaims.stepGate(step, shared: true, held: true, leaseFilesOnly: true, leaseExpiresAt: 100, now: 100)
                == .wait(seconds: BatchLineStart.waitSeconds))
            #expect(RemoteGroupClaims.stepGate(step, shared: true, held: false, leaseFilesOnly: true, leaseExpiresAt: nil, now: 100) == .lost)
            #expect(RemoteGroupClaims.stepGate(step, shared: true, held: false, leaseFilesOnly: false, leaseExpiresAt: nil, now: 100) == .lost)
            // A lock is kept through a pause.
            #expect(RemoteGroupClaims.stepGate(step, shared: true, held: true, leaseFilesOnly: false, leaseExpiresAt: nil, now: 100) == .go)
            #expect(RemoteGroupClaims.stepGate(step, shared: false, held: false, leaseFilesOnly: false, leaseExpiresAt: nil, now: 100) == .go)
        }
        let local: [RemoteBatchMachine.Step] = [.poll, .list(after: nil), .download(outputFileID: "f", errorFileID: nil), .split, .publish, .inspect(batchID: "b")]
        for step in local {
            #expect(RemoteGroupClaims.stepGate(step, shared: true, held: false, leaseFilesOnly: true, leaseExpiresAt: nil, now: 100) == .go)
        }
    }
}
