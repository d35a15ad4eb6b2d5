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

/// A task whose claim, taken over, shows it to be a member of a remote batch this daemon
/// follows: it goes back to that batch, its slot freed, and is never started.
@Suite struct SchedulerRejoinedLaneTests {
    let lanes = SchedulerLaneTests()

    @Test func aStartingTaskRejoinsItsBatchAndFreesItsSlot() {
        var s = lanes.scheduler(SchedulerResumedLaneTests.noBatch)
        #expect(s.handle(.arrived(.valid(lanes.task("a", window: nil))), now: 0) == [.start(lanes.task("a", window: nil), endpoint: 0)])
        _ = s.handle(.arrived(.valid(lanes.task("b", window: nil))), now: 0)
        #expect(s.counts.transferring == 1 && s.counts.queued == 1)
        // The slot goes to the next task at once.
        #expect(s.handle(.rejoinedLane(id: "a"), now: 0) == [.start(lanes.task("b", window: nil), endpoint: 0)])
        #expect(s.state(of: "a") == .laned && s.counts.laned == 1 && s.counts.transferring == 1)
        // Its batch's outcome ends it as any laned task's does.
        _ = s.handle(.laneEnded(id: "a"), now: 0)
        _ = s.handle(.finalized(id: "a"), now: 0)
        #expect(s.state(of: "a") == nil)
    }

    @Test func onlyAStartingTaskRejoins() {
        var s = lanes.scheduler()
        _ = s.handle(.arrived(.valid(lanes.task("laned"))), now: 0)
        #expect(s.handle(.rejoinedLane(id: "laned"), now: 0).isEmpty)
        #expect(s.state(of: "laned") == .laned && s.counts.laned == 1)
        #expect(s.handle(.rejoinedLane(id: "unknown"), now: 0).isEmpty)
        #expect(s.state(of: "unknown") == nil)
    }
}
