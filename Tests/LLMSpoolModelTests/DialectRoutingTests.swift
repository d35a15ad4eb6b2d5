import Foundation
import Testing
@testable import LLMSpoolModel

/// Requests go only to endpoints whose api serves their dialect; fallback, cool-down and the
/// failure of a request nobody serves.
@Suite struct DialectRoutingTests {
    func task(_ id: String, dialect: String = MessagesDialect.id, preferred: Int = 0) -> TaskDescriptor {
        var summary = RequestSummary(model: "m", stream: false, size: 10, estimatedTokens: 10)
        summary.dialect = dialect
        return TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json", summary: summary,
                              history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0), preferredEndpoint: preferred))
    }

    func gate(_ name: String, _ api: EndpointAPI, concurrency: Int = 4) -> EndpointGate {
        EndpointGate(concurrency: concurrency, cooldownAfterFailures: 1, cooldownSeconds: 30, name: name, api: api, now: 0)
    }

    func starts(_ actions: [Scheduler.Action]) -> [String: Int] {
        var result: [String: Int] = [:]
        for case .start(let task, let endpoint) in actions { result[task.id] = endpoint }
        return result
    }

    /// anthropic "a1", openai "o", anthropic "a2": the OpenAI one sits between the two.
    func mixed() -> Scheduler {
        Scheduler(concurrency: 8, gates: [gate("a1", .anthropic), gate("o", .openai), gate("a2", .anthropic)])
    }

    @Test func eachDialectStartsOnItsOwnKindOfEndpoint() {
        var s = mixed()
        #expect(starts(s.handle(.arrived(.valid(task("m"))), now: 0)) == ["m": 0])
        #expect(starts(s.handle(.arrived(.valid(task("c", dialect: ChatCompletionsDialect.id))), now: 0)) == ["c": 1])
        // A chat request preferring an Anthropic endpoint goes to the OpenAI one all the same.
        #expect(starts(s.handle(.arrived(.valid(task("c2", dialect: ChatCompletionsDialect.id, preferred: 2))), now: 0)) == ["c2": 1])
    }

    @Test func fallbackSkipsEndpointsOfAnotherAPI() {
        var s = mixed()
        // The retry rotation names the next endpoint in the list (the OpenAI one): the Messages
        // request goes on to the next Anthropic one instead, and from there back to the first.
        #expect(starts(s.handle(.arrived(.valid(task("m", preferred: 1))), now: 0)) == ["m": 2])
        #expect(starts(s.handle(.arrived(.valid(task("n", preferred: 3))), now: 0)) == ["n": 0])
    }

    @Test func coolDownMovesOnlyToAnEndpointOfTheSameAPI() {
        var s = mixed()
        _ = s.handle(.arrived(.valid(task("m"))), now: 0)
        // One retryable failure cools a1 down (cooldownAfterFailures 1).
        _ = s.handle(.transferEnded(id: "m", feedback: EndpointFeedback(.retryableFailure)), now: 1)
        #expect(starts(s.handle(.arrived(.valid(task("n"))), now: 2)) == ["n": 2])
        // Both Anthropic endpoints cooling: the request waits, it is not sent to the OpenAI one.
        _ = s.handle(.transferEnded(id: "n", feedback: EndpointFeedback(.retryableFailure)), now: 3)
        #expect(s.handle(.arrived(.valid(task("p"))), now: 4).isEmpty)
        #expect(s.state(of: "p") == .queued)
        #expect(s.nextWake == 31)
        #expect(starts(s.handle(.tick, now: 31)) == ["p": 0])
    }

    @Test func aFullEndpointOfTheRightAPIMakesTheRequestWait() {
        var s = Scheduler(concurrency: 8, gates: [gate("a", .anthropic, concurrency: 1), gate("o", .openai)])
        _ = s.handle(.arrived(.valid(task("m1"))), now: 0)
        #expect(s.handle(.arrived(.valid(task("m2"))), now: 0).isEmpty)
        #expect(s.state(of: "m2") == .queued)
        #expect(starts(s.handle(.transferEnded(id: "m1", feedback: EndpointFeedback(.answered)), now: 1)) == ["m2": 0])
    }

    @Test func aRequestNoEndpointSpeaksFailsAtOnceNamingWhatIsConfigured() {
        var s = Scheduler(concurrency: 1, gates: [gate("stub", .openai)])
        let actions = s.handle(.arrived(.valid(task("m"))), now: 0)
        #expect(actions == [.noEndpoint(task("m"), message: "no endpoint speaks anthropic, which a messages request needs (configured: stub (openai))")])
        #expect(s.state(of: "m") == .finishing)
        #expect(s.transferring == 0)
        // It takes no slot: a chat request still starts.
        #expect(starts(s.handle(.arrived(.valid(task("c", dialect: ChatCompletionsDialect.id))), now: 0)) == ["c": 0])
        _ = s.handle(.finalized(id: "m"), now: 0)
        #expect(s.state(of: "m") == nil)
    }

    @Test func aReloadThatRemovesTheLastEndpointOfAnAPIFailsWhatIsQueuedForIt() {
        var s = Scheduler(concurrency: 1, gates: [gate("a", .anthropic), gate("o", .openai)])
        _ = s.handle(.arrived(.valid(task("m1"))), now: 0)
        _ = s.handle(.arrived(.valid(task("m2"))), now: 0)
        #expect(s.state(of: "m2") == .queued)
        let actions = s.reconfigure(concurrency: 1, gates: [gate("o", .openai)], now: 1)
        #expect(actions.count == 1)
        guard case .noEndpoint(let failed, let message)? = actions.first else {
            Issue.record("expected noEndpoint, got \(actions)")
            return
        }
        #expect(failed.id == "m2")
        #expect(message.contains("configured: o (openai)"))
        #expect(s.state(of: "m2") == .finishing)
    }

    @Test func noEndpointIsNeverRetried() {
        let failure = AttemptFailure(.noEndpoint, "no endpoint speaks anthropic")
        #expect(!RetryPolicy.isRetryable(failure, headers: ["x-should-retry": "true"]))
        #expect(AttemptFailure.Kind.noEndpoint.rawValue == "no-endpoint")
    }
}
