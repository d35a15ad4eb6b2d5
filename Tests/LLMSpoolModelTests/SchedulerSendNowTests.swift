import Foundation
import Testing
@testable import LLMSpoolModel

/// `retry ID` and `retry --all` on requests waiting for their retry.
@Suite struct SchedulerSendNowTests {
    func task(_ id: String, notBefore: Double? = nil) -> TaskDescriptor {
        TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json",
                       summary: RequestSummary(model: "m", stream: false, size: 10, estimatedTokens: 1),
                       history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0),
                                            notBefore: notBefore.map { Date(timeIntervalSince1970: $0) }))
    }

    func started(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap { if case .start(let task, _) = $0 { return task.id } else { return nil } }
    }

    @Test func aWaitingTaskGoesAtOnceWithoutItsWait() throws {
        var s = Scheduler(concurrency: 2, gates: [EndpointGate(concurrency: 2, now: 0)])
        #expect(s.handle(.arrived(.valid(task("a", notBefore: 100))), now: 0).isEmpty)
        let actions = s.handle(.sendNow(id: "a"), now: 1)
        #expect(started(actions) == ["a"])
        guard case .start(let sent, _)? = actions.first else { Issue.record("not started"); return }
        #expect(sent.history.notBefore == nil, "the record must not keep the old wait")
        // Its old timer, reached later, starts nothing more.
        #expect(s.handle(.transferEnded(id: "a", feedback: EndpointFeedback(.answered)), now: 2).isEmpty)
        #expect(started(s.handle(.tick, now: 200)).isEmpty)
    }

    @Test func allSendsEveryWaitingTaskAndNothingElse() throws {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0)])
        #expect(started(s.handle(.arrived(.valid(task("running"))), now: 0)) == ["running"])
        #expect(s.handle(.arrived(.valid(task("queued"))), now: 0).isEmpty)
        #expect(s.handle(.arrived(.valid(task("w2", notBefore: 50))), now: 0).isEmpty)
        #expect(s.handle(.arrived(.valid(task("w1", notBefore: 60))), now: 0).isEmpty)
        #expect(s.handle(.sendNow(id: nil), now: 1).isEmpty, "the one slot is taken")
        #expect(s.state(of: "w1") == .queued && s.state(of: "w2") == .queued)
        // In the order they were queued: the one already queued first, then the waiting ones by id.
        #expect(started(s.handle(.transferEnded(id: "running", feedback: EndpointFeedback(.answered)), now: 2)) == ["queued"])
        _ = s.handle(.finalized(id: "running"), now: 2)
        #expect(started(s.handle(.transferEnded(id: "queued", feedback: EndpointFeedback(.answered)), now: 3)) == ["w1"])
        _ = s.handle(.finalized(id: "queued"), now: 3)
        #expect(started(s.handle(.transferEnded(id: "w1", feedback: EndpointFeedback(.answered)), now: 4)) == ["w2"])
    }

    @Test func onlyWaitingTasksAreTouched() throws {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0)])
        #expect(started(s.handle(.arrived(.valid(task("a"))), now: 0)) == ["a"])
        #expect(s.handle(.sendNow(id: "a"), now: 1).isEmpty, "in flight: nothing to do")
        #expect(s.handle(.sendNow(id: "unknown"), now: 1).isEmpty)
        #expect(s.state(of: "a") == .transferring(endpoint: 0))
        _ = s.handle(.transferEnded(id: "a", feedback: EndpointFeedback(.answered)), now: 2)
        #expect(s.handle(.sendNow(id: "a"), now: 2).isEmpty, "finishing: nothing to do")
        #expect(s.state(of: "a") == .finishing)
    }

    @Test func aRetryDeferredByTheFinisherCanBeSentNow() throws {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0)])
        #expect(started(s.handle(.arrived(.valid(task("a"))), now: 0)) == ["a"])
        _ = s.handle(.transferEnded(id: "a", feedback: EndpointFeedback(.retryableFailure)), now: 1)
        #expect(s.handle(.retry(task("a", notBefore: 500), at: 500), now: 1).isEmpty)
        #expect(started(s.handle(.sendNow(id: "a"), now: 2)) == ["a"])
    }

    /// Two retryable failures cool the endpoint down (cooldown_after_failures 2) for 30 s.
    func cooled() -> Scheduler {
        var s = Scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, cooldownAfterFailures: 2, cooldownSeconds: 30, now: 0)])
        for id in ["f1", "f2"] {
            _ = s.handle(.arrived(.valid(task(id))), now: 0)
            _ = s.handle(.transferEnded(id: id, feedback: EndpointFeedback(.retryableFailure)), now: 0)
            _ = s.handle(.finalized(id: id), now: 0)
        }
        return s
    }

    @Test func sendNowPassesAnEndpointsCoolDownLikePostqueueI() {
        var s = cooled()
        #expect(s.handle(.arrived(.valid(task("held"))), now: 1).isEmpty, "the cool-down holds it")
        #expect(s.handle(.arrived(.valid(task("other"))), now: 1).isEmpty)
        #expect(s.handle(.arrived(.valid(task("later", notBefore: 5))), now: 1).isEmpty)
        #expect(started(s.handle(.sendNow(id: "held"), now: 2)) == ["held"], "asked for, it passes the cool-down")
        #expect(s.state(of: "other") == .queued, "the others still wait for the cool-down")
        #expect(started(s.handle(.sendNow(id: "later"), now: 3)) == ["later"], "a waiting one passes its back-off and the cool-down")
        #expect(started(s.handle(.tick, now: 10)).isEmpty, "the ask is spent; the cool-down still holds the rest")
        #expect(started(s.handle(.tick, now: 31)) == ["other"], "the cool-down ends")
    }

    @Test func sendNowSpentByAFailureDoesNotPassTheNextCoolDown() {
        var s = cooled()
        _ = s.handle(.arrived(.valid(task("held"))), now: 1)
        #expect(started(s.handle(.sendNow(id: "held"), now: 2)) == ["held"])
        _ = s.handle(.transferEnded(id: "held", feedback: EndpointFeedback(.retryableFailure)), now: 2)
        _ = s.handle(.retry(task("held", notBefore: 3), at: 3), now: 2)
        #expect(started(s.handle(.tick, now: 4)).isEmpty, "asked once, it went once")
    }

    @Test func sendNowDoesNotPassAProvidersPause() throws {
        var s = Scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, cooldownAfterFailures: 10, now: 0)])
        _ = s.handle(.arrived(.valid(task("asks"))), now: 0)
        var feedback = EndpointFeedback(.retryableFailure)
        feedback.pauseSeconds = 40
        _ = s.handle(.transferEnded(id: "asks", feedback: feedback), now: 0)
        #expect(s.handle(.arrived(.valid(task("held"))), now: 1).isEmpty)
        #expect(started(s.handle(.sendNow(id: "held"), now: 2)).isEmpty, "the provider asked for 40 s")
        #expect(started(s.handle(.tick, now: 41)) == ["held"])
    }
}
