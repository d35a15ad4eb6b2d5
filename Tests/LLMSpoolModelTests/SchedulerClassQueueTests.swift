import Foundation
import Testing
@testable import LLMSpoolModel

/// A request whose endpoints must wait holds back only requests for the same endpoints:
/// the queue is one line per class (`ClassQueues`), earliest arrival first across lines.
@Suite struct SchedulerClassQueueTests {
    func task(_ id: String, dialect: String = ChatCompletionsDialect.id, preferred: Int = 0, pinned: Int? = nil,
              takenOver: Bool = false) -> TaskDescriptor {
        var summary = RequestSummary(model: "m", stream: false, size: 10, estimatedTokens: 10)
        summary.dialect = dialect
        var task = TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json", summary: summary,
                                  history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0), preferredEndpoint: preferred))
        task.pinnedEndpoint = pinned
        task.takenOver = takenOver
        return task
    }

    func gate(_ name: String, _ api: EndpointAPI, concurrency: Int = 1) -> EndpointGate {
        EndpointGate(concurrency: concurrency, cooldownAfterFailures: 1, cooldownSeconds: 30, name: name, api: api, now: 0)
    }

    func started(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap { if case .start(let task, _) = $0 { task.id } else { nil } }
    }

    @Test func aMessagesRequestIsNotQueuedBehindAFullOpenAIEndpoint() {
        var s = Scheduler(concurrency: 8, gates: [gate("o", .openai), gate("a", .anthropic)])
        #expect(started(s.handle(.arrived(.valid(task("c1"))), now: 0)) == ["c1"])
        #expect(started(s.handle(.arrived(.valid(task("c2"))), now: 0)).isEmpty, "the OpenAI endpoint is full")
        #expect(started(s.handle(.arrived(.valid(task("m1", dialect: MessagesDialect.id))), now: 0)) == ["m1"])
        #expect(s.state(of: "c2") == .queued)
        // The chat line keeps its order when room comes back.
        _ = s.handle(.arrived(.valid(task("c3"))), now: 0)
        #expect(started(s.handle(.transferEnded(id: "c1", feedback: EndpointFeedback(.answered)), now: 1)) == ["c2"])
    }

    @Test func aCoolingEndpointHoldsOnlyItsOwnClass() {
        var s = Scheduler(concurrency: 8, gates: [gate("o", .openai, concurrency: 4), gate("a", .anthropic, concurrency: 4)])
        _ = s.handle(.arrived(.valid(task("c1"))), now: 0)
        _ = s.handle(.transferEnded(id: "c1", feedback: EndpointFeedback(.retryableFailure)), now: 1)
        #expect(started(s.handle(.arrived(.valid(task("c2"))), now: 2)).isEmpty, "o cools down for 30 s")
        #expect(started(s.handle(.arrived(.valid(task("m1", dialect: MessagesDialect.id))), now: 2)) == ["m1"])
        #expect(s.nextWake == 31)
        #expect(started(s.handle(.tick, now: 31)) == ["c2"])
    }

    @Test func requestsPreferringAnotherEndpointOfTheSameAPIAreAClassOfTheirOwn() {
        // Fallback rotation: a retried request prefers the next endpoint; it need not wait
        // for the first one to have room.
        var s = Scheduler(concurrency: 8, gates: [gate("o1", .openai), gate("o2", .openai)])
        #expect(started(s.handle(.arrived(.valid(task("c1"))), now: 0)) == ["c1"])
        #expect(started(s.handle(.arrived(.valid(task("c2"))), now: 0)).isEmpty)
        #expect(started(s.handle(.arrived(.valid(task("r", preferred: 1))), now: 0)) == ["r"])
        #expect(started(s.handle(.arrived(.valid(task("p", pinned: 1))), now: 0)).isEmpty, "pinned to o2, which is full")
        #expect(started(s.handle(.transferEnded(id: "r", feedback: EndpointFeedback(.answered)), now: 1)) == ["p"])
    }

    @Test func theEarliestArrivalGoesFirstAcrossClasses() {
        var s = Scheduler(concurrency: 2, gates: [gate("o", .openai, concurrency: 4), gate("a", .anthropic, concurrency: 4)])
        _ = s.handle(.arrived(.valid(task("c1"))), now: 0)
        _ = s.handle(.arrived(.valid(task("c2"))), now: 0)
        // The daemon's own concurrency (2) is full: every class waits, in arrival order.
        for id in ["m1", "c3", "m2"] {
            let dialect = id.hasPrefix("m") ? MessagesDialect.id : ChatCompletionsDialect.id
            #expect(started(s.handle(.arrived(.valid(task(id, dialect: dialect))), now: 0)).isEmpty)
        }
        #expect(started(s.handle(.transferEnded(id: "c1", feedback: EndpointFeedback(.answered)), now: 1)) == ["m1"])
        #expect(started(s.handle(.transferEnded(id: "c2", feedback: EndpointFeedback(.answered)), now: 1)) == ["c3"])
        #expect(started(s.handle(.transferEnded(id: "m1", feedback: EndpointFeedback(.answered)), now: 1)) == ["m2"])
    }

    @Test func aTakenOverTaskGoesBeforeEveryArrivalAndAWithdrawnOneIsPassed() {
        var s = Scheduler(concurrency: 1, gates: [gate("o", .openai, concurrency: 4), gate("a", .anthropic, concurrency: 4)])
        _ = s.handle(.arrived(.valid(task("c1"))), now: 0)
        _ = s.handle(.arrived(.valid(task("m1", dialect: MessagesDialect.id))), now: 0)
        _ = s.handle(.arrived(.valid(task("gone"))), now: 0)
        _ = s.handle(.arrived(.valid(task("t", takenOver: true))), now: 0)
        #expect(s.handle(.requestRemoved(id: "m1"), now: 0) == [.withdrawn(id: "m1")])
        #expect(started(s.handle(.transferEnded(id: "c1", feedback: EndpointFeedback(.answered)), now: 1)) == ["t"])
        _ = s.handle(.requestRemoved(id: "gone"), now: 1)
        #expect(started(s.handle(.transferEnded(id: "t", feedback: EndpointFeedback(.answered)), now: 2)).isEmpty, "nothing left")
        #expect(s.counts.queued == 0)
    }

    @Test func manyBlockedRequestsDoNotHoldAnotherClass() {
        var s = Scheduler(concurrency: 10_000, gates: [gate("o", .openai), gate("a", .anthropic, concurrency: 100)])
        for index in 0..<5_000 { _ = s.handle(.arrived(.valid(task("c\(index)"))), now: 0) }
        var messages = 0
        for index in 0..<100 { messages += started(s.handle(.arrived(.valid(task("m\(index)", dialect: MessagesDialect.id))), now: 0)).count }
        #expect(messages == 100)
        #expect(s.counts.queued == 4_999)
    }
}
