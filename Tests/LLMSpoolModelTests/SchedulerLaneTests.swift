import Foundation
import Testing
@testable import LLMSpoolModel

/// The scheduler's side of the background lane: which arrivals are laned, that a laned
/// task holds no slot and is never started live while laned, and each way out of the lane.
@Suite struct SchedulerLaneTests {
    static let routing = LaneRouting(endpoints: [LaneRouter.Endpoint(name: "live", batch: false), LaneRouter.Endpoint(name: "batchy", batch: true)])

    func task(_ id: String, window: String? = "24h", stream: Bool = false, attempts: Int = 0) -> TaskDescriptor {
        var summary = RequestSummary(model: "m", stream: stream, size: 10)
        summary.completionWindow = window
        let entry = AttemptEntry(startedAt: Date(timeIntervalSince1970: 0), endedAt: Date(timeIntervalSince1970: 1), endpoint: "batchy", outcome: "transport")
        return TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json", summary: summary,
                              history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0), attempts: Array(repeating: entry, count: attempts)))
    }

    func scheduler(_ routing: LaneRouting = Self.routing) -> Scheduler {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0), EndpointGate(concurrency: 1, now: 0)])
        s.laneRouting = routing
        return s
    }

    @Test func aRequestThatMayWaitIsHandedToTheLaneOfTheBatchEndpointAndHoldsNoSlot() {
        var s = scheduler()
        #expect(s.handle(.arrived(.valid(task("a"))), now: 0) == [.deferToLane(task("a"), endpoint: 1)])
        #expect(s.state(of: "a") == .laned)
        #expect(s.counts.laned == 1 && s.counts.transferring == 0)
        #expect(s.handle(.arrived(.valid(task("a"))), now: 0).isEmpty, "a rescan of a laned request is a duplicate")
        #expect(s.handle(.arrived(.valid(task("b", window: nil))), now: 0) == [.start(task("b", window: nil), endpoint: 0)])
    }

    @Test func streamsRetriesAndOtherWindowsGoLive() {
        var s = scheduler()
        #expect(s.handle(.arrived(.valid(task("s", stream: true))), now: 0) == [.start(task("s", stream: true), endpoint: 0)])
        _ = s.handle(.transferEnded(id: "s", feedback: EndpointFeedback(.answered)), now: 0)
        #expect(s.handle(.arrived(.valid(task("r", attempts: 1))), now: 0) == [.start(task("r", attempts: 1), endpoint: 0)])
        _ = s.handle(.transferEnded(id: "r", feedback: EndpointFeedback(.answered)), now: 0)
        #expect(s.handle(.arrived(.valid(task("w", window: "1h"))), now: 0) == [.start(task("w", window: "1h"), endpoint: 0)])
    }

    @Test func theLanesOutcomeEndsLikeAnAttemptAndARetryGoesLive() {
        var s = scheduler()
        _ = s.handle(.arrived(.valid(task("a"))), now: 0)
        #expect(s.handle(.retry(task("a"), at: 5), now: 0).isEmpty, "no retry while the lane holds it")
        #expect(s.state(of: "a") == .laned)
        #expect(s.handle(.laneEnded(id: "a"), now: 1).isEmpty)
        #expect(s.state(of: "a") == .finishing)
        _ = s.handle(.retry(task("a", attempts: 1), at: 5), now: 1)
        #expect(s.handle(.tick, now: 5) == [.start(task("a", attempts: 1), endpoint: 0)])
    }

    @Test func aReturnedTaskIsQueuedLiveAndAFinalisedOneIsForgotten() {
        var s = scheduler()
        _ = s.handle(.arrived(.valid(task("a"))), now: 0)
        _ = s.handle(.arrived(.valid(task("b"))), now: 0)
        #expect(s.handle(.laneReturned(task("a")), now: 0) == [.start(task("a"), endpoint: 0)])
        #expect(s.handle(.laneReturned(task("a")), now: 0).isEmpty, "only a laned task can be returned")
        _ = s.handle(.finalized(id: "b"), now: 0)
        #expect(s.state(of: "b") == nil)
        #expect(s.counts.laned == 0)
    }

    @Test func aLanedTaskIsHeldByTheLaneAloneAndTheReturnedOneIsTheOneThatStarts() {
        var s = scheduler()
        _ = s.handle(.arrived(.valid(task("a"))), now: 0)
        #expect(s.heldTask(of: "a") == nil, "the lane holds a laned task; the scheduler keeps its state only")
        // The lane hands the task back with what it learnt (here: an attempt more).
        #expect(s.handle(.laneReturned(task("a", attempts: 2)), now: 0) == [.start(task("a", attempts: 2), endpoint: 0)])
        #expect(s.heldTask(of: "a") == task("a", attempts: 2))
    }

    @Test func aReloadLeavesLanedTasksToTheLane() {
        var s = scheduler()
        _ = s.handle(.arrived(.valid(task("a"))), now: 0)
        let actions = s.reconfigure(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0), EndpointGate(concurrency: 1, now: 0)], now: 0)
        #expect(actions.isEmpty)
        #expect(s.state(of: "a") == .laned)
    }

    @Test func anEntryIsSmallWhateverATaskWeighs() {
        // Every known id has an entry; a task inline would make each slot a task's size.
        #expect(MemoryLayout<Scheduler.Entry>.stride <= 32)
        #expect(MemoryLayout<TaskDescriptor>.stride > 64, "the test means something only while a task is larger than an entry")
    }

    @Test func deletingALanedRequestAsksTheLaneToLetItGo() {
        var s = scheduler()
        _ = s.handle(.arrived(.valid(task("a"))), now: 0)
        #expect(s.handle(.requestRemoved(id: "a"), now: 0) == [.withdrawFromLane(id: "a")])
        #expect(s.state(of: "a") == .laned, "the lane answers with the outcome or the finalisation")
    }

    @Test func noBatchEndpointWithFallbackFailFailsAsNoEndpoint() {
        var s = scheduler(LaneRouting(endpoints: [LaneRouter.Endpoint(name: "live", batch: false)], fallback: .fail))
        let actions = s.handle(.arrived(.valid(task("a"))), now: 0)
        guard case .noEndpoint(_, let message)? = actions.first else {
            Issue.record("expected no-endpoint, got \(actions)")
            return
        }
        #expect(message.contains("deferred_fallback is fail") && message.contains("live"))
        #expect(s.state(of: "a") == .finishing)
    }
}

@Suite struct LaneRoutingTests {
    func task(format: String = JSONRequestFormat.id, endpoint: String? = nil, pinned: Int? = nil, dialect: String = ChatCompletionsDialect.id,
              window: String? = "24h") -> TaskDescriptor {
        var summary = RequestSummary(model: "m", stream: false, size: 10)
        summary.completionWindow = window
        summary.format = format
        summary.endpoint = endpoint
        summary.dialect = dialect
        var task = TaskDescriptor(id: "a", requestPath: "/s/outgoing/a.json", summary: summary)
        task.pinnedEndpoint = pinned
        return task
    }

    let routing = LaneRouting(endpoints: [LaneRouter.Endpoint(name: "batchy", batch: true),
                                          LaneRouter.Endpoint(name: "anthropic", batch: true, api: .anthropic)], defaultWindow: "24h")

    @Test func onlyAJSONRequestWithNoEndpointOfItsOwnIsDeferredToABatchEndpointOfItsAPI() {
        #expect(routing.route(task()) == .deferred(endpoint: 0))
        #expect(routing.route(task(window: nil)) == .deferred(endpoint: 0), "the config's default window")
        #expect(routing.route(task(format: PromptRequestFormat.id)) == .live)
        #expect(routing.route(task(endpoint: "batchy")) == .live)
        #expect(routing.route(task(pinned: 0)) == .live)
        #expect(routing.route(task(dialect: MessagesDialect.id)) == .deferred(endpoint: 1), "Messages go to the Anthropic batch endpoint")
        #expect(routing.route(task(dialect: EmbeddingsDialect.id)) == .deferred(endpoint: 0))
    }
}
