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
}
