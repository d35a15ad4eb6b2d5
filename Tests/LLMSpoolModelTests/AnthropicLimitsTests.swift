import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct AnthropicLimitsTests {
    static let now = Date(timeIntervalSince1970: 1_796_140_800)  // 2026-12-01T16:00:00Z

    @Test(arguments: [
        ("2026-12-01T16:00:00Z", 1_796_140_800.0),
        ("2026-12-01T16:00:30.250Z", 1_796_140_830.25),
        ("2026-12-01t16:00:30z", 1_796_140_830.0),
        ("2026-12-01T17:00:30+01:00", 1_796_140_830.0),
        ("2026-12-01T15:30:30-00:30", 1_796_140_830.0),
        (" 1970-01-01T00:00:00Z ", 0.0),
        ("2024-02-29T00:00:00Z", 1_709_164_800.0),
    ])
    func rfc3339TimesAreRead(text: String, seconds: Double) throws {
        let date = try #require(RFC3339Date.parse(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.001)
    }

    @Test(arguments: ["", "2026-12-01", "2026-12-01T16:00:00", "2026-13-01T16:00:00Z", "2026-12-01T24:00:00Z",
                      "2026-12-01T16:00:00.Z", "2026-12-01T16:00:00+0100", "2026-12-01T16:00:00Zjunk",
                      "99999-12-01T16:00:00Z", "2026-12-01T16:00:00+99:00", "Mon, 01 Dec 2026 16:00:00 GMT",
                      "2026-12-01T16:00:00." + String(repeating: "9", count: 100) + "Z", "２０２６-12-01T16:00:00Z"])
    func anythingElseIsNoTime(text: String) {
        #expect(RFC3339Date.parse(text) == nil)
    }

    @Test func anExhaustedAnthropicLimitPausesUntilItsReset() {
        let headers = ["anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
                       "anthropic-ratelimit-requests-reset": "2026-12-01T16:00:20Z",
                       "anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": "2026-12-01T16:00:45Z"]
        let feedback = EndpointFeedback.from(.response(status: 200), headers: headers, now: Self.now)
        #expect(feedback.outcome == .answered)
        #expect(feedback.pauseSeconds == 45)
        var gate = EndpointGate(concurrency: 2, maxPauseSeconds: 30, api: .anthropic, now: 0)
        gate.admit(estimatedTokens: 1, now: 0)
        gate.release(feedback, now: 0)
        // Capped as every provider pause is.
        #expect(gate.readiness(estimatedTokens: 1, now: 1) == .waitUntil(30))
    }

    /// A 429 that gives no Retry-After but says when its used-up limit resets waits for
    /// the reset, not one second (after which it would only be refused again).
    @Test func a429WithoutRetryAfterWaitsForTheExhaustedLimitsReset() {
        let anthropic = ["anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": "2026-12-01T16:00:40Z"]
        let openai = ["x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "12s"]
        for headers in [anthropic, openai] {
            let feedback = EndpointFeedback.from(.response(status: 429), headers: headers, now: Self.now)
            #expect(feedback.outcome == .retryableFailure)
            #expect(feedback.pauseSeconds == (headers == anthropic ? 40 : 12) && feedback.pauseCause == .providerRateLimit, "\(feedback)")
        }
        var withRetryAfter = anthropic
        withRetryAfter["retry-after"] = "3"
        let asked = EndpointFeedback.from(.response(status: 429), headers: withRetryAfter, now: Self.now)
        #expect(asked.pauseSeconds == 3 && asked.pauseCause == .retryAfter, "Retry-After, when given, is what the provider asks")
        #expect(EndpointFeedback.from(.response(status: 429), headers: [:], now: Self.now).pauseSeconds == 1, "nothing said: a second")
    }

    @Test func inputAndOutputTokenLimitsCountToo() {
        let headers = ["anthropic-ratelimit-output-tokens-remaining": "0", "anthropic-ratelimit-output-tokens-reset": "2026-12-01T16:00:05Z"]
        #expect(EndpointFeedback.from(.response(status: 200), headers: headers, now: Self.now).pauseSeconds == 5)
    }

    @Test(arguments: [
        ["anthropic-ratelimit-requests-remaining": "3", "anthropic-ratelimit-requests-reset": "2026-12-01T16:00:20Z"],
        ["anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "2026-12-01T15:59:00Z"],
        ["anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "soon"],
        ["anthropic-ratelimit-requests-remaining": "none", "anthropic-ratelimit-requests-reset": "2026-12-01T16:00:20Z"],
        ["anthropic-ratelimit-requests-remaining": "0"],
    ])
    func noPauseWithoutAnExhaustedLimitAndAFutureReset(headers: [String: String]) {
        #expect(EndpointFeedback.from(.response(status: 200), headers: headers, now: Self.now).pauseSeconds == nil)
    }

    @Test func overloaded529IsRetriedAsTheServerAsks() {
        let body = Array(#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.utf8)
        let failure = AttemptFailure(.http, "the endpoint answered HTTP 529: Overloaded", httpStatus: 529, providerBody: body)
        #expect(RetryPolicy.isRetryable(failure, headers: [:]))
        #expect(!RetryPolicy.isRetryable(failure, headers: ["x-should-retry": "false"]))
        let decision = RetryPolicy.decide(failure, headers: ["retry-after": "7"], attempts: 1, firstSeen: Self.now, now: Self.now,
                                          settings: RetrySettings(), random: 0)
        #expect(decision == .retry(afterSeconds: 7, reason: .http))
        #expect(EndpointFeedback.from(.response(status: 529), headers: ["retry-after": "7"], now: Self.now)
            == EndpointFeedback(.retryableFailure, pauseSeconds: 7))
        // Anthropic's error body is no missing-key answer.
        #expect(!RetryPolicy.isAuthenticationFailure(failure))
        // A 400 is final even with Anthropic's retry header absent.
        #expect(!RetryPolicy.isRetryable(AttemptFailure(.http, "400", httpStatus: 400), headers: [:]))
        #expect(RetryPolicy.isRetryable(AttemptFailure(.http, "400", httpStatus: 400), headers: ["x-should-retry": "true"]))
    }
}
