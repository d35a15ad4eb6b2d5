import Foundation
import Testing
@testable import LLMSpoolModel

/// Members of remote batches the lane resumed after a restart: they go back to their batch
/// whatever the config now says about batching, once, and only while nothing was tried.
@Suite struct SchedulerResumedLaneTests {
    let lanes = SchedulerLaneTests()
    static let noBatch = LaneRouting(endpoints: [LaneRouter.Endpoint(name: "live", batch: false)], fallback: .fail)

    @Test func aResumedMemberRejoinsItsBatchWhenNoEndpointBatchesAnyMore() {
        var s = lanes.scheduler(Self.noBatch)
        #expect(s.handle(.laneResumed(ids: ["a", "b"]), now: 0).isEmpty)
        #expect(s.handle(.arrived(.valid(lanes.task("a"))), now: 0) == [.rejoinLane(lanes.task("a"))])
        #expect(s.state(of: "a") == .laned && s.counts.laned == 1 && s.counts.transferring == 0)
        // Neither live nor failed for want of a batch endpoint, whatever its window says now.
        #expect(s.handle(.arrived(.valid(lanes.task("b", window: nil))), now: 0) == [.rejoinLane(lanes.task("b", window: nil))])
    }

    @Test func withTheConfigStillBatchingItTakesTheUsualWay() {
        var s = lanes.scheduler()
        _ = s.handle(.laneResumed(ids: ["a"]), now: 0)
        #expect(s.handle(.arrived(.valid(lanes.task("a"))), now: 0) == [.deferToLane(lanes.task("a"), endpoint: 1)])
    }

    @Test func aMemberAlreadyTriedGoesLiveAndEachIdRejoinsOnce() {
        var s = lanes.scheduler(Self.noBatch)
        _ = s.handle(.laneResumed(ids: ["tried", "once"]), now: 0)
        #expect(s.handle(.arrived(.valid(lanes.task("tried", attempts: 1))), now: 0) == [.start(lanes.task("tried", attempts: 1), endpoint: 0)])
        #expect(s.handle(.arrived(.valid(lanes.task("once"))), now: 0) == [.rejoinLane(lanes.task("once"))])
        _ = s.handle(.laneEnded(id: "once"), now: 0)
        _ = s.handle(.finalized(id: "once"), now: 0)
        let again = s.handle(.arrived(.valid(lanes.task("once"))), now: 0)
        #expect(again.count == 1 && again.first.map { if case .noEndpoint = $0 { true } else { false } } == true,
                "a new file under the name takes the config's way: \(again)")
    }

    @Test func aFinalizedMemberThatNeverArrivedIsForgotten() {
        var s = lanes.scheduler(Self.noBatch)
        _ = s.handle(.laneResumed(ids: ["gone"]), now: 0)
        _ = s.handle(.finalized(id: "gone"), now: 0)
        let later = s.handle(.arrived(.valid(lanes.task("gone"))), now: 0)
        #expect(!later.contains(.rejoinLane(lanes.task("gone"))), "\(later)")
    }
}
