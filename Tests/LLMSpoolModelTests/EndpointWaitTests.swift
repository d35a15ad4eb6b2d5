import Foundation
import Testing
@testable import LLMSpoolModel

/// Why an endpoint takes no request: every wait has a cause and an end that people see.
@Suite struct EndpointWaitTests {
    let time: (Double) -> String = { "t\(Int($0))" }

    @Test func aFreeEndpointHasNoWait() {
        let gate = EndpointGate(concurrency: 2, now: 0)
        #expect(gate.wait(now: 0) == nil)
    }

    @Test func aCoolDownSaysHowManyFailuresStartedIt() {
        var gate = EndpointGate(concurrency: 2, cooldownAfterFailures: 3, cooldownSeconds: 30, now: 0)
        for _ in 0..<3 {
            gate.admit(estimatedTokens: 1, now: 10)
            gate.release(EndpointFeedback(.retryableFailure), now: 10)
        }
        let wait = gate.wait(now: 11)
        #expect(wait == EndpointWait(cause: .coolingDown, until: 40, failures: 3))
        #expect(wait?.describe(endpoint: "openai", time: time) == "endpoint openai cooling down until t40 (3 failures in a row)")
        #expect(gate.wait(now: 41) == nil, "the wait ends when the cool-down does")
    }

    @Test func aRetryAfterIsNamedAsSuch() throws {
        var gate = EndpointGate(concurrency: 2, cooldownAfterFailures: 10, now: 0)
        let feedback = EndpointFeedback.from(.response(status: 503), headers: ["retry-after": "40"], now: Date(timeIntervalSince1970: 100))
        #expect(feedback.pauseCause == .retryAfter)
        gate.admit(estimatedTokens: 1, now: 100)
        gate.release(feedback, now: 100)
        #expect(gate.wait(now: 101) == EndpointWait(cause: .retryAfter, until: 140))
        #expect(gate.wait(now: 101)?.describe(endpoint: "p", time: time) == "endpoint p paused by Retry-After until t140")
    }

    /// The gate says what the wait judge says: a pause past `passOverSeconds` reads as a
    /// cool-down (the scheduler goes on to the next endpoint), a shorter one as a wait.
    @Test func aLongPauseIsPassedOverAndAShortOneWaitedFor() {
        var gate = EndpointGate(concurrency: 2, cooldownAfterFailures: 10, maxPauseSeconds: 3600, now: 0)
        gate.admit(estimatedTokens: 1, now: 100)
        gate.release(EndpointFeedback.from(.response(status: 429), headers: ["retry-after": "99999"], now: Date(timeIntervalSince1970: 100)), now: 100)
        #expect(gate.readiness(estimatedTokens: 1, now: 101) == .coolingDown(until: 3700), "capped at max_retry_after_seconds, passed over")
        #expect(gate.wait(now: 101)?.isPassedOver(now: 101) == true)
        #expect(gate.readiness(estimatedTokens: 1, now: 3700 - EndpointWait.passOverSeconds + 1) == .waitUntil(3700), "its last minute is waited for")
        var brief = EndpointGate(concurrency: 2, cooldownAfterFailures: 10, now: 0)
        brief.admit(estimatedTokens: 1, now: 100)
        brief.release(EndpointFeedback.from(.response(status: 429), headers: ["retry-after": "5"], now: Date(timeIntervalSince1970: 100)), now: 100)
        #expect(brief.readiness(estimatedTokens: 1, now: 101) == .waitUntil(105))
    }

    @Test func anExhaustedRateLimitIsTheProvidersLimit() throws {
        var gate = EndpointGate(concurrency: 2, now: 0)
        let feedback = EndpointFeedback.from(.response(status: 200), headers: ["x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20s"],
                                             now: Date(timeIntervalSince1970: 0))
        #expect(feedback.pauseCause == .providerRateLimit)
        gate.admit(estimatedTokens: 1, now: 0)
        gate.release(feedback, now: 0)
        #expect(gate.wait(now: 1)?.cause == .providerRateLimit)
        let bare429 = EndpointFeedback.from(.response(status: 429), headers: [:], now: Date(timeIntervalSince1970: 0))
        #expect(bare429.pauseCause == .providerRateLimit)
        let timed429 = EndpointFeedback.from(.response(status: 429), headers: ["retry-after": "3"], now: Date(timeIntervalSince1970: 0))
        #expect(timed429.pauseCause == .retryAfter)
    }

    @Test func aShorterLaterPauseKeepsTheLongerOnesCause() {
        var gate = EndpointGate(concurrency: 4, cooldownAfterFailures: 10, now: 0)
        gate.admit(estimatedTokens: 1, now: 0)
        gate.release(EndpointFeedback(.retryableFailure, pauseSeconds: 60, pauseCause: .retryAfter), now: 0)
        gate.admit(estimatedTokens: 1, now: 1)
        gate.release(EndpointFeedback(.answered, pauseSeconds: 5, pauseCause: .providerRateLimit), now: 1)
        #expect(gate.wait(now: 2) == EndpointWait(cause: .retryAfter, until: 60))
    }

    @Test func theOwnRateLimitIsAskedWithoutTakingFromIt() {
        var gate = EndpointGate(concurrency: 4, requestsPerMinute: 1, now: 0)
        gate.admit(estimatedTokens: 1, now: 0)
        let first = gate.wait(now: 1)
        #expect(first?.cause == .ownRateLimit)
        #expect(gate.wait(now: 1) == first, "asking twice gives the same answer: nothing was taken")
        #expect(gate.readiness(estimatedTokens: 1, now: 1) == .waitUntil(first!.until))
    }

    @Test func theSchedulerListsEachEndpointsWait() {
        var cooling = EndpointGate(concurrency: 1, cooldownAfterFailures: 1, cooldownSeconds: 30, now: 0)
        cooling.admit(estimatedTokens: 1, now: 0)
        cooling.release(EndpointFeedback(.retryableFailure), now: 0)
        let scheduler = Scheduler(concurrency: 2, gates: [cooling, EndpointGate(concurrency: 1, now: 0)])
        #expect(scheduler.endpointWaits(now: 1) == [EndpointWait(cause: .coolingDown, until: 30, failures: 1), nil])
    }
}
