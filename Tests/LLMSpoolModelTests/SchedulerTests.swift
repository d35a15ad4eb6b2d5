import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct SchedulerTests {
    static let answered = EndpointFeedback(.answered)
    static let failedRetryably = EndpointFeedback(.retryableFailure)

    func task(_ id: String, tokens: Int = 10, notBefore: Double? = nil, preferred: Int = 0) -> TaskDescriptor {
        TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json",
                       summary: RequestSummary(model: "m", stream: false, size: 10, estimatedTokens: tokens),
                       history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0),
                                            notBefore: notBefore.map { Date(timeIntervalSince1970: $0) }, preferredEndpoint: preferred))
    }

    func scheduler(concurrency: Int = 2, gates: [EndpointGate]? = nil) -> Scheduler {
        Scheduler(concurrency: concurrency, gates: gates ?? [EndpointGate(concurrency: concurrency, now: 0)])
    }

    func arrive(_ scheduler: inout Scheduler, _ id: String, now: Double = 0) -> [Scheduler.Action] {
        scheduler.handle(.arrived(.valid(task(id))), now: now)
    }

    func started(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap { if case .start(let task, _) = $0 { return task.id } else { return nil } }
    }

    @Test func startsUpToTheLimitThenQueuesInArrivalOrder() {
        var s = scheduler(concurrency: 2)
        #expect(arrive(&s, "a") == [.start(task("a"), endpoint: 0)])
        #expect(started(arrive(&s, "b")) == ["b"])
        #expect(arrive(&s, "c").isEmpty)
        #expect(arrive(&s, "d").isEmpty)
        #expect(s.counts == Scheduler.Counts(queued: 2, deferred: 0, transferring: 2, finishing: 0))
        #expect(started(s.handle(.transferEnded(id: "b", feedback: Self.answered), now: 1)) == ["c"])
        #expect(started(s.handle(.transferEnded(id: "a", feedback: Self.answered), now: 1)) == ["d"])
        #expect(s.counts == Scheduler.Counts(queued: 0, deferred: 0, transferring: 2, finishing: 2))
    }

    @Test func aKnownIdIsNeverStartedTwice() {
        var s = scheduler(concurrency: 4)
        _ = arrive(&s, "a")
        #expect(arrive(&s, "a").isEmpty)
        #expect(s.handle(.arrived(.invalid(id: "a", requestPath: "p", problem: RequestProblem(.invalidJSON, "x"))), now: 0).isEmpty)
        #expect(s.handle(.arrived(.alreadyEnded(id: "a", requestPath: "p")), now: 0).isEmpty)
        _ = s.handle(.transferEnded(id: "a", feedback: Self.answered), now: 0)
        #expect(s.state(of: "a") == .finishing)
        #expect(arrive(&s, "a").isEmpty, "still finishing: a rescan must not restart it")
        _ = s.handle(.finalized(id: "a"), now: 0)
        #expect(s.state(of: "a") == nil)
        #expect(started(arrive(&s, "a")) == ["a"], "a new drop after the end is a new task")
    }

    @Test func invalidAndEndedRequestsTakeNoSlot() {
        var s = scheduler(concurrency: 1)
        let problem = RequestProblem(.invalidJSON, "bad")
        #expect(s.handle(.arrived(.invalid(id: "x", requestPath: "p", problem: problem)), now: 0) == [.reject(id: "x", requestPath: "p", problem: problem)])
        #expect(s.handle(.arrived(.alreadyEnded(id: "y", requestPath: "q")), now: 0) == [.completeEnded(id: "y", requestPath: "q")])
        #expect(s.transferring == 0)
        #expect(started(arrive(&s, "z")) == ["z"])
    }

    @Test func removalWithdrawsQueuedAndDeferredTasksAndCancelsRunningOnes() {
        var s = scheduler(concurrency: 1)
        _ = arrive(&s, "a")
        _ = arrive(&s, "b")
        _ = arrive(&s, "c")
        #expect(s.handle(.requestRemoved(id: "b"), now: 0) == [.withdrawn(id: "b")])
        #expect(s.handle(.requestRemoved(id: "a"), now: 0) == [.cancelTransfer(id: "a")])
        #expect(started(s.handle(.transferEnded(id: "a", feedback: EndpointFeedback(.neutral)), now: 0)) == ["c"])
        #expect(s.handle(.requestRemoved(id: "a"), now: 0).isEmpty, "finishing: nothing to cancel")
        #expect(s.handle(.requestRemoved(id: "zzz"), now: 0) == [.requestLeft(id: "zzz")], "held by no task: only said")
        _ = s.handle(.transferEnded(id: "c", feedback: Self.answered), now: 0)
        _ = s.handle(.retry(task("c"), at: 100), now: 0)
        #expect(s.state(of: "c") == .deferred(until: 100))
        #expect(s.handle(.requestRemoved(id: "c"), now: 1) == [.withdrawn(id: "c")])
        #expect(s.handle(.tick, now: 200).isEmpty, "a withdrawn retry never starts")
    }

    /// A file that leaves while its task's outcome is written is said to have left once
    /// that outcome is final (the finisher may have noted that it awaits the file's
    /// clean-up), never when the task is retried: its next start finds the file gone.
    @Test func aRequestThatLeftWhileFinishingIsSaidToHaveLeftAfterItsFinalization() {
        var s = scheduler(concurrency: 2)
        _ = arrive(&s, "a")
        _ = arrive(&s, "b")
        _ = s.handle(.transferEnded(id: "a", feedback: Self.answered), now: 0)
        _ = s.handle(.transferEnded(id: "b", feedback: Self.answered), now: 0)
        #expect(s.handle(.requestRemoved(id: "a"), now: 0).isEmpty, "finishing: nothing yet")
        #expect(s.handle(.requestRemoved(id: "b"), now: 0).isEmpty)
        #expect(s.handle(.finalized(id: "a"), now: 0).contains(.requestLeft(id: "a")))
        _ = s.handle(.retry(task("b"), at: 100), now: 0)
        #expect(started(s.handle(.tick, now: 100)) == ["b"])
        _ = s.handle(.transferEnded(id: "b", feedback: Self.answered), now: 100)
        #expect(!s.handle(.finalized(id: "b"), now: 100).contains(.requestLeft(id: "b")), "the retry forgot the removal")
        #expect(s.handle(.finalized(id: "a"), now: 0).isEmpty, "said once")
    }

    /// The withdrawal names the file the task was read from: the finisher tells by it a
    /// withdrawn request from an ended one whose file another daemon removed.
    @Test func aWithdrawalCarriesTheIdentityOfTheFileItsTaskWasReadFrom() {
        var s = scheduler(concurrency: 1)
        _ = arrive(&s, "a")
        let identity = FileIdentity(device: 1, inode: 2, size: 10, modifiedNanoseconds: 3, contentHash: 4)
        let queued = TaskDescriptor(id: "b", requestPath: "/s/outgoing/b.json", summary: RequestSummary(model: "m", stream: false, size: 10),
                                    identity: identity, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
        _ = s.handle(.arrived(.valid(queued)), now: 0)
        #expect(s.handle(.requestRemoved(id: "b"), now: 0) == [.withdrawn(id: "b", identity: identity)])
    }

    @Test func aRetryHoldsNoSlotAndStartsWhenDue() {
        var s = scheduler(concurrency: 1)
        _ = arrive(&s, "a")
        _ = arrive(&s, "b")
        #expect(started(s.handle(.transferEnded(id: "a", feedback: Self.failedRetryably), now: 10)) == ["b"])
        #expect(s.handle(.retry(task("a"), at: 13), now: 10).isEmpty)
        #expect(s.counts.deferred == 1)
        #expect(s.nextWake == 13)
        _ = s.handle(.transferEnded(id: "b", feedback: Self.answered), now: 11)
        #expect(s.handle(.tick, now: 12.9).isEmpty, "never earlier than asked")
        #expect(started(s.handle(.tick, now: 13)) == ["a"])
        #expect(s.nextWake == nil)
    }

    @Test func aPersistedNotBeforeDefersTheTaskOnArrival() {
        var s = scheduler(concurrency: 1)
        #expect(s.handle(.arrived(.valid(task("a", notBefore: 50))), now: 10).isEmpty)
        #expect(s.state(of: "a") == .deferred(until: 50))
        #expect(started(s.handle(.tick, now: 50)) == ["a"])
        #expect(started(s.handle(.arrived(.valid(task("b", notBefore: 5))), now: 10)) == [], "slot taken")
        #expect(s.state(of: "b") == .queued, "a past not-before queues at once")
    }

    @Test func aRetryWithAPreferenceGoesToTheNextEndpoint() {
        var s = scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, now: 0), EndpointGate(concurrency: 4, now: 0)])
        #expect(s.handle(.arrived(.valid(task("a", preferred: 1))), now: 0) == [.start(task("a", preferred: 1), endpoint: 1)])
    }

    @Test func aCoolingEndpointIsSkippedForTheNext() {
        var s = scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, cooldownAfterFailures: 1, cooldownSeconds: 30, now: 0),
                                                  EndpointGate(concurrency: 4, now: 0)])
        _ = arrive(&s, "a")
        _ = s.handle(.transferEnded(id: "a", feedback: Self.failedRetryably), now: 1)
        #expect(s.handle(.arrived(.valid(task("b"))), now: 2) == [.start(task("b"), endpoint: 1)])
        #expect(s.handle(.arrived(.valid(task("c"))), now: 40) == [.start(task("c"), endpoint: 0)], "primary again after the cool-down")
    }

    @Test func aPinnedTaskWaitsForItsEndpointAndNeverFallsBack() {
        var s = scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, cooldownAfterFailures: 1, cooldownSeconds: 30, now: 0),
                                                  EndpointGate(concurrency: 4, now: 0)])
        _ = arrive(&s, "a")
        _ = s.handle(.transferEnded(id: "a", feedback: Self.failedRetryably), now: 1)
        var pinned = task("p", preferred: 1)
        pinned.pinnedEndpoint = 0
        #expect(s.handle(.arrived(.valid(pinned)), now: 2).isEmpty, "its endpoint cools down: it waits rather than go to the other")
        #expect(s.nextWake == 31)
        #expect(s.handle(.tick, now: 31) == [.start(pinned, endpoint: 0)])
        var second = task("q")
        second.pinnedEndpoint = 1
        #expect(s.handle(.arrived(.valid(second)), now: 32) == [.start(second, endpoint: 1)], "pinned to the second endpoint")
    }

    @Test func whenEveryEndpointCoolsTheQueueWaitsForTheFirstToRecover() {
        var s = scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, cooldownAfterFailures: 1, cooldownSeconds: 30, now: 0)])
        _ = arrive(&s, "a")
        _ = s.handle(.transferEnded(id: "a", feedback: Self.failedRetryably), now: 0)
        #expect(arrive(&s, "b", now: 1).isEmpty)
        #expect(s.nextWake == 30)
        #expect(started(s.handle(.tick, now: 30)) == ["b"])
    }

    @Test func aRateLimitedEndpointMakesTheQueueWaitRatherThanFallBack() {
        var s = scheduler(concurrency: 10, gates: [EndpointGate(concurrency: 10, requestsPerMinute: 60, now: 0),
                                                   EndpointGate(concurrency: 10, now: 0)])
        for id in ["a", "b"] { _ = arrive(&s, id, now: 0) }
        // 60 a minute starts full: the bucket holds 60, so both start at once.
        #expect(s.transferring == 2)
        var limited = scheduler(concurrency: 10, gates: [EndpointGate(concurrency: 10, requestsPerMinute: 1, now: 0)])
        #expect(started(arrive(&limited, "a", now: 0)) == ["a"])
        #expect(arrive(&limited, "b", now: 0).isEmpty)
        let wake = try! #require(limited.nextWake)
        #expect(abs(wake - 60) < 0.001, "one a minute: the next start is a minute later")
        #expect(limited.handle(.tick, now: 59).isEmpty)
        #expect(started(limited.handle(.tick, now: 60)) == ["b"])
    }

    @Test func a429PausesTheWholeEndpoint() {
        var s = scheduler(concurrency: 4)
        _ = arrive(&s, "a")
        _ = s.handle(.transferEnded(id: "a", feedback: EndpointFeedback(.retryableFailure, pauseSeconds: 5)), now: 10)
        #expect(arrive(&s, "b", now: 11).isEmpty)
        #expect(s.nextWake == 15)
        #expect(started(s.handle(.tick, now: 15)) == ["b"])
    }

    @Test func perEndpointConcurrencyIsRespected() {
        var s = scheduler(concurrency: 10, gates: [EndpointGate(concurrency: 1, now: 0)])
        #expect(started(arrive(&s, "a")) == ["a"])
        #expect(arrive(&s, "b").isEmpty)
        #expect(started(s.handle(.transferEnded(id: "a", feedback: Self.answered), now: 0)) == ["b"])
    }

    @Test func drainStopsStartingButLetsRunningEnd() {
        var s = scheduler(concurrency: 1)
        _ = arrive(&s, "a")
        _ = arrive(&s, "b")
        #expect(s.handle(.drain, now: 0).isEmpty)
        #expect(s.handle(.transferEnded(id: "a", feedback: Self.answered), now: 0).isEmpty)
        #expect(arrive(&s, "c").isEmpty)
        #expect(s.nextWake == nil)
    }

    @Test func eventsForUnknownIdsAreIgnored() {
        var s = scheduler(concurrency: 1)
        #expect(s.handle(.transferEnded(id: "ghost", feedback: Self.answered), now: 0).isEmpty)
        #expect(s.handle(.retry(task("ghost"), at: 1), now: 0).isEmpty)
        #expect(s.transferring == 0)
        #expect(s.handle(.finalized(id: "ghost"), now: 0).isEmpty)
        #expect(s.isIdle)
    }

    @Test func aLongQueueIsServedInOrder() {
        var s = scheduler(concurrency: 1)
        _ = arrive(&s, "first")
        for index in 0..<5000 { _ = arrive(&s, "t\(index)") }
        var order: [String] = []
        var current = "first"
        for _ in 0..<5000 {
            let next = started(s.handle(.transferEnded(id: current, feedback: Self.answered), now: 0))
            _ = s.handle(.finalized(id: current), now: 0)
            guard let id = next.first else { break }
            order.append(id)
            current = id
        }
        #expect(order == (0..<5000).map { "t\($0)" })
        _ = s.handle(.transferEnded(id: current, feedback: Self.answered), now: 0)
        _ = s.handle(.finalized(id: current), now: 0)
        #expect(s.isIdle)
        #expect(s.counts == Scheduler.Counts())
    }
}

@Suite struct SchedulerBackpressureTests {
    func task(_ id: String) -> TaskDescriptor {
        TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json", summary: RequestSummary(model: "m", stream: false, size: 10))
    }

    /// Each ended attempt holds its .partial open until the finisher writes its outcome:
    /// the engine must not run ahead of the finisher without bound.
    @Test func attemptsWaitingForTheFinisherHoldBackNewStarts() {
        var scheduler = Scheduler(concurrency: 2, gates: [EndpointGate(concurrency: 2, now: 0)])
        #expect(scheduler.finishingLimit == 64)
        var started = 0
        for index in 0..<200 {
            started += scheduler.handle(.arrived(.valid(task("t\(index)"))), now: 0).count
        }
        var finishing: [String] = []
        // End every transfer at once, never finalizing: starts stop at the limit.
        var running = (0..<started).map { "t\($0)" }
        while let id = running.popLast() {
            for action in scheduler.handle(.transferEnded(id: id, feedback: EndpointFeedback(.answered)), now: 0) {
                if case .start(let next, _) = action { running.append(next.id) }
            }
            finishing.append(id)
        }
        // Transfers already running still end, so at most concurrency - 1 more than the limit.
        #expect(scheduler.counts.finishing >= scheduler.finishingLimit)
        #expect(scheduler.counts.finishing <= scheduler.finishingLimit + scheduler.concurrency - 1)
        #expect(scheduler.counts.transferring == 0)
        #expect(scheduler.counts.queued == 200 - scheduler.counts.finishing)
        // Starts resume once the finisher is below the limit again.
        var resumed: [Scheduler.Action] = []
        while resumed.isEmpty, let id = finishing.popLast() {
            resumed = scheduler.handle(.finalized(id: id), now: 0)
        }
        #expect(scheduler.counts.finishing == scheduler.finishingLimit - 1)
        #expect(resumed.count == scheduler.concurrency, "both free slots start")
    }
}
