import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct RetryPolicyTests {
    let now = Date(timeIntervalSince1970: 1_000_000)
    var settings: RetrySettings { RetrySettings() }

    func http(_ status: Int) -> AttemptFailure { AttemptFailure(.http, "HTTP \(status)", httpStatus: status) }

    @Test(arguments: [(408, true), (409, true), (429, true), (500, true), (502, true), (503, true), (599, true),
                      (400, false), (401, false), (403, false), (404, false), (422, false)])
    func statusesFollowTheOpenAIRule(status: Int, retryable: Bool) {
        #expect(RetryPolicy.isRetryable(http(status), headers: [:]) == retryable)
    }

    @Test func xShouldRetryOverridesTheStatus() {
        #expect(RetryPolicy.isRetryable(http(400), headers: ["x-should-retry": "true"]))
        #expect(!RetryPolicy.isRetryable(http(503), headers: ["x-should-retry": "false"]))
        #expect(RetryPolicy.isRetryable(http(503), headers: ["x-should-retry": "maybe"]))
    }

    @Test func otherKinds() {
        #expect(RetryPolicy.isRetryable(AttemptFailure(.transport, "refused", curlCode: 7), headers: [:]))
        #expect(RetryPolicy.isRetryable(AttemptFailure(.transport, "idle", timer: .idle), headers: [:]))
        #expect(!RetryPolicy.isRetryable(AttemptFailure(.transport, "bad url", curlCode: 3), headers: [:]))
        #expect(!RetryPolicy.isRetryable(AttemptFailure(.transport, "bad CA", curlCode: 60), headers: [:]))
        #expect(RetryPolicy.isRetryable(AttemptFailure(.incompleteStream, "cut"), headers: [:]))
        #expect(RetryPolicy.isRetryable(AttemptFailure(.malformedResponse, "html"), headers: [:]))
        #expect(RetryPolicy.isRetryable(AttemptFailure(.providerError, "overloaded"), headers: [:]))
        #expect(RetryPolicy.isRetryable(AttemptFailure(.providerError, "busy", embeddedCode: 503), headers: [:]))
        #expect(!RetryPolicy.isRetryable(AttemptFailure(.providerError, "context too long", embeddedCode: 400), headers: [:]))
        #expect(!RetryPolicy.isRetryable(AttemptFailure(.invalidRequest, "bad"), headers: [:]))
    }

    @Test func retryAfterHeadersInTheirOrder() {
        #expect(RetryPolicy.requestedDelay(["retry-after-ms": "1500", "retry-after": "9"], now: now) == 1.5)
        #expect(RetryPolicy.requestedDelay(["retry-after": "3"], now: now) == 3)
        #expect(RetryPolicy.requestedDelay(["retry-after": "2.5"], now: now) == 2.5)
        let date = Date(timeIntervalSince1970: 1_000_042)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(RetryPolicy.requestedDelay(["retry-after": formatter.string(from: date)], now: now) == 42)
        #expect(RetryPolicy.requestedDelay(["retry-after": "soon"], now: now) == nil)
        #expect(RetryPolicy.requestedDelay(["retry-after": "-3"], now: now) == nil)
        #expect(RetryPolicy.requestedDelay([:], now: now) == nil)
    }

    /// What `Double` reads but no provider means: hexadecimal, exponents, infinities, signs.
    @Test func aDelayIsDigitsWithAnOptionalFractionAndNothingElse() {
        for text in ["0x10", "1e3", "1E3", "inf", "infinity", "nan", "+5", "-0", ".5", "5.", "1.2.3", "1_000", "١٢", "0x1p4"] {
            #expect(RetryPolicy.requestedDelay(["retry-after": text], now: now) == nil, "\(text)")
            #expect(RetryPolicy.requestedDelay(["retry-after-ms": text], now: now) == nil, "ms \(text)")
        }
        #expect(RetryPolicy.requestedDelay(["retry-after": " 0010 "], now: now) == 10)
        #expect(RetryPolicy.requestedDelay(["retry-after": "0"], now: now) == 0)
        #expect(RetryPolicy.requestedDelay(["retry-after-ms": "0x10", "retry-after": "7"], now: now) == 7, "a bad ms header falls back")
        #expect(RetryPolicy.requestedDelay(["retry-after": String(repeating: "9", count: 400)], now: now) == .greatestFiniteMagnitude,
                "digits past Double's range: the longest finite wait")
    }

    @Test func backoffDoublesUpToTheCapAndJitterOnlyShortens() {
        #expect(RetryPolicy.backoff(afterAttempts: 1, settings: settings, random: 0) == 0.5)
        #expect(RetryPolicy.backoff(afterAttempts: 2, settings: settings, random: 0) == 1)
        #expect(RetryPolicy.backoff(afterAttempts: 4, settings: settings, random: 0) == 4)
        #expect(RetryPolicy.backoff(afterAttempts: 30, settings: settings, random: 0) == 60)
        #expect(RetryPolicy.backoff(afterAttempts: 1000, settings: settings, random: 0) == 60)
        #expect(RetryPolicy.backoff(afterAttempts: 2, settings: settings, random: 1) == 0.75)
    }

    @Test func aRetryAfterIsWaitedInFullNeverLess() {
        let decision = RetryPolicy.decide(http(429), headers: ["retry-after": "3"], attempts: 1, firstSeen: now, now: now,
                                          settings: settings, random: 1)
        #expect(decision == .retry(afterSeconds: 3, reason: .http))
        let long = RetryPolicy.decide(http(503), headers: ["retry-after": "1800"], attempts: 1, firstSeen: now, now: now,
                                      settings: settings, random: 0)
        #expect(long == .retry(afterSeconds: 1800, reason: .http), "a long Retry-After is honoured, not cut to a minute")
    }

    @Test func limitsEndTheRetries() {
        guard case .giveUp(let tooLong) = RetryPolicy.decide(http(429), headers: ["retry-after": "7200"], attempts: 1, firstSeen: now,
                                                             now: now, settings: settings, random: 0) else {
            Issue.record("past max_retry_after_seconds the request fails")
            return
        }
        #expect(tooLong == .retryAfterTooLong(askedSeconds: 7200, limitSeconds: 3600))
        #expect(tooLong.description.contains("max_retry_after_seconds"))
        guard case .giveUp(let many) = RetryPolicy.decide(http(500), headers: [:], attempts: 10, firstSeen: now, now: now,
                                                          settings: settings, random: 0) else {
            Issue.record("max_attempts ends the retries")
            return
        }
        #expect(many == .attemptsExhausted(attempts: 10))
        #expect(many.description.contains("10 attempts"))
        guard case .giveUp(let old) = RetryPolicy.decide(http(500), headers: [:], attempts: 2, firstSeen: now.addingTimeInterval(-86_399.9),
                                                         now: now, settings: settings, random: 0) else {
            Issue.record("max_lifetime_seconds ends the retries")
            return
        }
        #expect(old.description.contains("max_lifetime_seconds"))
        #expect(RetryPolicy.decide(http(400), headers: [:], attempts: 1, firstSeen: now, now: now, settings: settings, random: 0)
                == .giveUp(.notRetryable))
    }

    @Test(arguments: [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("0.5", 0.5)])
    func rateLimitResetDurations(text: String, seconds: Double) {
        #expect(abs((RetryPolicy.duration(text) ?? -1) - seconds) < 1e-9)
    }

    @Test func badDurationsAreNil() {
        #expect(RetryPolicy.duration("soon") == nil)
        #expect(RetryPolicy.duration("5x") == nil)
        #expect(RetryPolicy.duration("3s4") == nil)
    }
}

@Suite struct TokenBucketAndGateTests {
    @Test func aBucketRefillsContinuouslyUpToItsSize() {
        var bucket = TokenBucket(perMinute: 60, now: 0)
        #expect(bucket.wait(for: 60, now: 0) == 0)
        bucket.take(60, now: 0)
        #expect(bucket.wait(for: 1, now: 0) == 1)
        #expect(bucket.wait(for: 1, now: 1) == 0)
        #expect(bucket.wait(for: 60, now: 1000) == 0)
        #expect(bucket.level == 60, "never more than a minute's worth")
    }

    /// Allowed when the bucket is full, and charged a minute's budget at most: one request
    /// with max_tokens 2e9 held every request of its endpoint for weeks before.
    @Test(arguments: [500.0, 2e9, Double(Int.max)]) func anOversizedTakeIsAllowedWhenFullAndCostsAMinuteAtMost(amount: Double) {
        var bucket = TokenBucket(perMinute: 100, now: 0)
        #expect(bucket.wait(for: amount, now: 0) == 0)
        bucket.take(amount, now: 0)
        #expect(bucket.level == 0)
        #expect(bucket.wait(for: 1, now: 0) == 0.6)
        #expect(bucket.wait(for: 100, now: 60) == 0, "a minute later the bucket is full again")
    }

    @Test func providerHeadersPauseWhenALimitIsUsedUp() {
        let headers = ["x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s",
                       "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "9s"]
        #expect(EndpointFeedback.from(.response(status: 200), headers: headers, now: Date()) == EndpointFeedback(.answered, pauseSeconds: 2, pauseCause: .providerRateLimit))
        #expect(EndpointFeedback.from(.response(status: 200), headers: [:], now: Date()) == EndpointFeedback(.answered))
        #expect(EndpointFeedback.from(.response(status: 429), headers: [:], now: Date()) == EndpointFeedback(.retryableFailure, pauseSeconds: 1, pauseCause: .providerRateLimit))
        #expect(EndpointFeedback.from(.response(status: 400), headers: [:], now: Date()) == EndpointFeedback(.answered))
        #expect(EndpointFeedback.from(.transportError(code: 7, message: ""), headers: [:], now: Date()) == EndpointFeedback(.retryableFailure))
        #expect(EndpointFeedback.from(.cancelled, headers: [:], now: Date()) == EndpointFeedback(.neutral))
    }

    @Test func repeatedFailuresCoolAnEndpointDownAndSuccessResetsTheCount() {
        var gate = EndpointGate(concurrency: 5, cooldownAfterFailures: 2, cooldownSeconds: 10, now: 0)
        gate.admit(estimatedTokens: 1, now: 0)
        gate.release(EndpointFeedback(.retryableFailure), now: 0)
        gate.admit(estimatedTokens: 1, now: 0)
        gate.release(EndpointFeedback(.answered), now: 0)
        #expect(gate.readiness(estimatedTokens: 1, now: 0) == .ready)
        gate.admit(estimatedTokens: 1, now: 0)
        gate.release(EndpointFeedback(.retryableFailure), now: 1)
        gate.admit(estimatedTokens: 1, now: 1)
        gate.release(EndpointFeedback(.retryableFailure), now: 1)
        #expect(gate.readiness(estimatedTokens: 1, now: 5) == .coolingDown(until: 11))
        #expect(gate.readiness(estimatedTokens: 1, now: 11) == .ready)
        #expect(gate.active == 0)
    }
}
