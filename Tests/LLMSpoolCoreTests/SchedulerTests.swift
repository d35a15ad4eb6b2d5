import Testing
@testable import LLMSpoolCore

@Suite struct SchedulerTests {
    func task(_ id: String) -> TaskDescriptor {
        TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json", summary: RequestSummary(model: "m", stream: false, size: 10))
    }

    func arrive(_ scheduler: inout Scheduler, _ id: String) -> [Scheduler.Action] {
        scheduler.handle(.arrived(.valid(task(id))))
    }

    @Test func startsUpToTheLimitThenQueuesInArrivalOrder() {
        var scheduler = Scheduler(concurrency: 2)
        #expect(arrive(&scheduler, "a") == [.start(task("a"))])
        #expect(arrive(&scheduler, "b") == [.start(task("b"))])
        #expect(arrive(&scheduler, "c") == [])
        #expect(arrive(&scheduler, "d") == [])
        #expect(scheduler.queuedCount == 2)
        #expect(scheduler.handle(.transferEnded(id: "b")) == [.start(task("c"))])
        #expect(scheduler.handle(.transferEnded(id: "a")) == [.start(task("d"))])
        #expect(scheduler.transferring == 2)
    }

    @Test func aKnownIdIsNeverStartedTwice() {
        var scheduler = Scheduler(concurrency: 4)
        _ = arrive(&scheduler, "a")
        #expect(arrive(&scheduler, "a") == [])
        #expect(scheduler.handle(.arrived(.invalid(id: "a", requestPath: "p", problem: RequestProblem(.invalidJSON, "x")))) == [])
        _ = scheduler.handle(.transferEnded(id: "a"))
        #expect(scheduler.state(of: "a") == .finishing)
        #expect(arrive(&scheduler, "a") == [], "still finishing: a rescan must not restart it")
        _ = scheduler.handle(.finalized(id: "a"))
        #expect(scheduler.state(of: "a") == nil)
        #expect(arrive(&scheduler, "a") == [.start(task("a"))], "a new drop after the end is a new task")
    }

    @Test func anInvalidRequestIsRejectedWithoutTakingASlot() {
        var scheduler = Scheduler(concurrency: 1)
        let problem = RequestProblem(.invalidJSON, "bad")
        #expect(scheduler.handle(.arrived(.invalid(id: "x", requestPath: "p", problem: problem))) == [.reject(id: "x", requestPath: "p", problem: problem)])
        #expect(scheduler.transferring == 0)
        #expect(arrive(&scheduler, "y") == [.start(task("y"))])
    }

    @Test func removingAQueuedRequestWithdrawsIt() {
        var scheduler = Scheduler(concurrency: 1)
        _ = arrive(&scheduler, "a")
        _ = arrive(&scheduler, "b")
        _ = arrive(&scheduler, "c")
        #expect(scheduler.handle(.requestRemoved(id: "b")) == [.dropQueued(id: "b")])
        #expect(scheduler.handle(.transferEnded(id: "a")) == [.start(task("c"))])
    }

    @Test func removingARunningRequestCancelsItsTransfer() {
        var scheduler = Scheduler(concurrency: 1)
        _ = arrive(&scheduler, "a")
        #expect(scheduler.handle(.requestRemoved(id: "a")) == [.cancelTransfer(id: "a")])
    }

    @Test func removalWhileFinishingOrUnknownDoesNothing() {
        var scheduler = Scheduler(concurrency: 1)
        _ = arrive(&scheduler, "a")
        _ = scheduler.handle(.transferEnded(id: "a"))
        #expect(scheduler.handle(.requestRemoved(id: "a")) == [])
        #expect(scheduler.handle(.requestRemoved(id: "zzz")) == [])
    }

    @Test func drainStopsStartingButLetsRunningEnd() {
        var scheduler = Scheduler(concurrency: 1)
        _ = arrive(&scheduler, "a")
        _ = arrive(&scheduler, "b")
        #expect(scheduler.handle(.drain) == [])
        #expect(scheduler.handle(.transferEnded(id: "a")) == [])
        #expect(arrive(&scheduler, "c") == [])
    }

    @Test func endedEventsForUnknownIdsAreIgnored() {
        var scheduler = Scheduler(concurrency: 1)
        #expect(scheduler.handle(.transferEnded(id: "ghost")) == [])
        #expect(scheduler.transferring == 0)
        #expect(scheduler.handle(.finalized(id: "ghost")) == [])
    }

    @Test func aLongQueueIsServedInOrder() {
        var scheduler = Scheduler(concurrency: 1)
        _ = arrive(&scheduler, "first")
        for index in 0..<5000 { _ = arrive(&scheduler, "t\(index)") }
        var started: [String] = []
        var current = "first"
        for _ in 0..<5000 {
            let actions = scheduler.handle(.transferEnded(id: current))
            _ = scheduler.handle(.finalized(id: current))
            guard case .start(let next)? = actions.first else { break }
            started.append(next.id)
            current = next.id
        }
        #expect(started == (0..<5000).map { "t\($0)" })
        #expect(scheduler.isIdle == false)
        _ = scheduler.handle(.transferEnded(id: current))
        _ = scheduler.handle(.finalized(id: current))
        #expect(scheduler.isIdle)
    }
}
