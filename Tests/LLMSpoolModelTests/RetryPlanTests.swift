import Foundation
import Testing
@testable import LLMSpoolModel

/// The retry table as one decision: the disk rule, the rotation and the limits.
@Suite struct RetryPlanTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    func history(_ outcomes: [String], firstSeen: Date? = nil) -> TaskHistory {
        TaskHistory(firstSeen: firstSeen ?? now, attempts: outcomes.map {
            AttemptEntry(startedAt: now, endedAt: now, endpoint: "e", outcome: $0, bytesSent: 0, bytesReceived: 0)
        })
    }

    @Test func aFullDiskKeepsTheEndpointAndUsesNoAttempts() {
        var settings = RetrySettings()
        settings.maxAttempts = 2
        let plan = RetryPolicy.plan(AttemptFailure(.disk, "ENOSPC"), headers: [:], history: history(["disk", "disk", "disk", "disk"]),
                                    endpointIndex: 1, endpointCount: 3, carriers: 3, now: now, settings: settings, random: 0)
        guard case .retry(_, let endpoint, let reason) = plan else {
            Issue.record("a full disk is retried whatever the attempt count: \(plan)")
            return
        }
        #expect(endpoint == 1)
        #expect(reason == .disk)
    }

    /// The Retry-After of the endpoint that failed pauses that endpoint (the scheduler's
    /// gate), not the request: with another endpoint the retry goes there after the usual
    /// back-off, even when the wait asked is past max_retry_after_seconds. Before, it waited
    /// out the pause, or failed without trying the fallback.
    @Test(arguments: ["30", "99999", "Fri, 31 Dec 9999 23:59:59 GMT"])
    func aRetryAfterPausesItsEndpointAndTheRetryGoesToTheNext(retryAfter: String) {
        let settings = RetrySettings()
        let failure = AttemptFailure(.http, "HTTP 429", httpStatus: 429)
        let plan = RetryPolicy.plan(failure, headers: ["retry-after": retryAfter], history: history(["http"]), endpointIndex: 0,
                                    endpointCount: 2, carriers: 2, now: now, settings: settings, random: 0)
        guard case .retry(let delay, let endpoint, _) = plan else {
            Issue.record("retried on the next endpoint: \(plan)")
            return
        }
        #expect(endpoint == 1)
        #expect(delay == RetryPolicy.backoff(afterAttempts: 1, settings: settings, random: 0), "the usual back-off, not the pause: \(delay)")
        // With one endpoint the pause is the request's too, and past the limit it fails.
        let alone = RetryPolicy.plan(failure, headers: ["retry-after": retryAfter], history: history(["http"]), endpointIndex: 0,
                                     endpointCount: 1, carriers: 1, now: now, settings: settings, random: 0)
        if retryAfter == "30" {
            #expect(alone == .retry(afterSeconds: 30, endpoint: 0, reason: .http))
        } else if case .giveUp(.retryAfterTooLong) = alone {
        } else {
            Issue.record("one endpoint, a wait past the limit: \(alone)")
        }
    }

    /// Only endpoints that could carry the request count as somewhere else to go: with an
    /// OpenAI and an Anthropic endpoint, a chat request (or one naming its endpoint) has
    /// one, and a Retry-After past max_retry_after_seconds fails it. Before, any second
    /// endpoint in the config made the request wait out the pause and go back to the same one.
    @Test func aRetryAfterIsTheRequestsOwnWhenNoOtherEndpointCouldCarryIt() {
        #expect(RetryPolicy.carriers(pinned: false, api: .openai, endpointAPIs: [.openai, .anthropic]) == 1)
        #expect(RetryPolicy.carriers(pinned: false, api: .openai, endpointAPIs: [.openai, .anthropic, .openai]) == 2)
        #expect(RetryPolicy.carriers(pinned: true, api: .openai, endpointAPIs: [.openai, .openai]) == 1)
        #expect(RetryPolicy.carriers(pinned: false, api: .anthropic, endpointAPIs: [.openai]) == 0)
        let failure = AttemptFailure(.http, "HTTP 429", httpStatus: 429)
        let plan = RetryPolicy.plan(failure, headers: ["retry-after": "7200"], history: history(["http"]), endpointIndex: 0,
                                    endpointCount: 2, carriers: 1, now: now, settings: RetrySettings(), random: 0)
        #expect(plan == .giveUp(.retryAfterTooLong(askedSeconds: 7200, limitSeconds: RetrySettings().maxRetryAfterSeconds)), "\(plan)")
    }

    @Test func anExpiredDeferralGoesLiveAtOnceOrFailsAsConfigured() {
        var settings = RetrySettings()
        settings.maxAttempts = 1
        let expired = AttemptFailure(.expired, "the remote batch b expired")
        let old = history(["expired"], firstSeen: now.addingTimeInterval(-90_000))
        #expect(RetryPolicy.plan(expired, headers: [:], history: old, endpointIndex: 1, endpointCount: 2, carriers: 2, now: now, settings: settings, random: 0.5)
                == .retry(afterSeconds: 0, endpoint: 1, reason: .expired), "past the lifetime and max_attempts: the expiry was no attempt")
        #expect(RetryPolicy.plan(expired, headers: ["x-should-retry": "false"], history: old, endpointIndex: 0, endpointCount: 1, carriers: 1, now: now,
                                 settings: settings, random: 0) == .retry(afterSeconds: 0, endpoint: 0, reason: .expired))
        settings.deferredExpired = .fail
        #expect(RetryPolicy.plan(expired, headers: ["x-should-retry": "true"], history: old, endpointIndex: 0, endpointCount: 1, carriers: 1, now: now,
                                 settings: settings, random: 0) == .giveUp(.expiredNotLive))
        #expect(RetryPolicy.GiveUp.expiredNotLive.description == "deferred_expired is fail")
        #expect(RetryPolicy.countedAttempts(history(["expired", "transport", "disk"])) == 1)
        #expect(!RetryPolicy.isRetryable(expired, headers: ["x-should-retry": "true"]))
        #expect(AttemptJudge.judgeEnding(.expired("gone"), bodyPrefix: { [] }) == .failure(AttemptFailure(.expired, "gone")))
        #expect(AttemptEnding.expired("gone").metricsLabel == "expired")
    }

    /// An answer larger than the free space: the disk failed while it arrived (bytes
    /// received), a probe write then passed, and the request was sent (and paid for) again
    /// and again. Three such failures in a row end it; failures before any byte do not.
    @Test func anAnswerThatDoesNotFitIsNotPaidForAFourthTime() {
        func entries(_ received: [Int64]) -> TaskHistory {
            TaskHistory(firstSeen: now, attempts: received.map {
                AttemptEntry(startedAt: now, endedAt: now, endpoint: "e", outcome: "disk", bytesSent: 10, bytesReceived: $0)
            })
        }
        let disk = AttemptFailure(.disk, "ENOSPC")
        func plan(_ history: TaskHistory) -> RetryPolicy.Plan {
            RetryPolicy.plan(disk, headers: [:], history: history, endpointIndex: 0, endpointCount: 1, carriers: 1, now: now, settings: RetrySettings(), random: 0)
        }
        #expect(plan(entries([9_000_000, 9_000_000])).isRetry)
        #expect(plan(entries([9_000_000, 9_000_000, 9_000_000])) == .giveUp(.answerDidNotFit(attempts: 3)))
        #expect(plan(entries([0, 0, 0, 0, 0])).isRetry, "nothing had arrived: the disk was full before the answer, no answer was paid")
        var mixed = entries([9_000_000, 9_000_000])
        mixed.attempts.insert(AttemptEntry(startedAt: now, endedAt: now, endpoint: "e", outcome: "transport", bytesSent: 10, bytesReceived: 0), at: 1)
        #expect(plan(mixed).isRetry, "only failures in a row count")
        #expect(RetryPolicy.GiveUp.answerDidNotFit(attempts: 3).description.contains("could not be written to the spool 3 times in a row"))
    }

    @Test func aFullDiskPastTheLifetimeGivesUp() {
        let plan = RetryPolicy.plan(AttemptFailure(.disk, "ENOSPC"), headers: [:], history: history(["disk"], firstSeen: now.addingTimeInterval(-86_400)),
                                    endpointIndex: 0, endpointCount: 1, carriers: 1, now: now, settings: RetrySettings(), random: 0)
        #expect(plan == .giveUp(.diskStayedFull))
    }

    @Test(arguments: [(0, 3, 1), (1, 3, 2), (2, 3, 0), (0, 1, 0), (5, 1, 0), (-1, 2, 1)])
    func anyOtherFailureMovesToTheNextEndpoint(index: Int, count: Int, expected: Int) {
        let plan = RetryPolicy.plan(AttemptFailure(.http, "HTTP 500", httpStatus: 500), headers: [:], history: history(["http"]),
                                    endpointIndex: index, endpointCount: count, carriers: count, now: now, settings: RetrySettings(), random: 0)
        guard case .retry(_, let endpoint, _) = plan else {
            Issue.record("a 500 is retried: \(plan)")
            return
        }
        #expect(endpoint == expected)
    }

    @Test func diskAttemptsDoNotCountTowardsMaxAttempts() {
        var settings = RetrySettings()
        settings.maxAttempts = 2
        let counted = RetryPolicy.plan(AttemptFailure(.http, "HTTP 500", httpStatus: 500), headers: [:], history: history(["disk", "disk", "http"]),
                                       endpointIndex: 0, endpointCount: 1, carriers: 1, now: now, settings: settings, random: 0)
        #expect(counted != .giveUp(.attemptsExhausted(attempts: 1)))
        let exhausted = RetryPolicy.plan(AttemptFailure(.http, "HTTP 500", httpStatus: 500), headers: [:], history: history(["http", "disk", "http"]),
                                         endpointIndex: 0, endpointCount: 1, carriers: 1, now: now, settings: settings, random: 0)
        #expect(exhausted == .giveUp(.attemptsExhausted(attempts: 2)))
    }

    @Test(arguments: ["1e300", "1e309", "9223372036854775808", "100000000000000000000000", String(repeating: "9", count: 400)])
    func anAbsurdRetryAfterFailsTheRequestWithoutATrap(header: String) {
        let plan = RetryPolicy.plan(AttemptFailure(.http, "HTTP 429", httpStatus: 429), headers: ["retry-after": header], history: history(["http"]),
                                    endpointIndex: 0, endpointCount: 1, carriers: 1, now: now, settings: RetrySettings(), random: 0)
        guard case .giveUp(let reason) = plan else {
            // An exponent is no delay (a delay is digits): none was asked for, so the backoff applies.
            #expect(header.contains("e"), "\(header): \(plan)")
            return
        }
        #expect(!header.contains("e") && reason.description.contains("max_retry_after_seconds"), "\(reason)")
    }

    @Test(arguments: [Double.infinity, -Double.infinity, Double.nan, 1e300, -1e300, 9.3e18, 0, 1.2])
    func wholeSecondsNeverTraps(seconds: Double) {
        #expect(!RetryPolicy.wholeSeconds(seconds).isEmpty)
    }

    @Test func durationsRefuseWhatIsNotAFiniteTime() {
        #expect(RetryPolicy.duration("inf") == nil)
        #expect(RetryPolicy.duration("nan") == nil)
        #expect(RetryPolicy.duration("-5") == nil)
        #expect(RetryPolicy.duration("1e400s") == nil)
        #expect(RetryPolicy.duration("100000000000000000000000s") == 1e23, "finite, however large: the gate caps it")
    }
}

/// HTTP dates as `Retry-After` carries them, read without Foundation's formatters.
@Suite struct HTTPDateTests {
    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777.0),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777.0),
        ("Sun Nov  6 08:49:37 1994", 784_111_777.0),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
        ("Tue, 29 Feb 2028 23:59:59 GMT", 1_835_481_599.0),
        ("Wed, 31 Dec 9999 23:59:59 GMT", 253_402_300_799.0),
    ])
    func theThreeFormsAreRead(text: String, seconds: Double) {
        #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == seconds)
    }

    @Test(arguments: ["", "soon", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
                      "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 99999999999999999999 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
                      "Sun, ٠٦ Nov 1994 08:49:37 GMT", "1 2 3 4 5 6 7"])
    func anythingElseIsNoDate(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func agreesWithFoundationOverCenturies() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Double(Int.random(in: 0...253_402_300_799, using: &generator))
            let text = formatter.string(from: Date(timeIntervalSince1970: seconds))
            #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == seconds, "\(text)")
        }
    }
}

extension RetryPolicy.Plan {
    var isRetry: Bool { if case .retry = self { true } else { false } }
}
