import LLMSpoolCore
import Testing

/// A refused or missing key is never retried: no attempt can bring one.
@Suite struct AuthenticationRetryTests {
    func http(_ status: Int, _ body: String? = nil) -> AttemptFailure {
        AttemptFailure(.http, "the endpoint answered HTTP \(status)", httpStatus: status, providerBody: body.map { Array($0.utf8) })
    }

    @Test func unauthorizedAndForbiddenAreNeverRetriedEvenWhenTheServerSaysRetry() {
        for status in [401, 403] {
            #expect(!RetryPolicy.isRetryable(http(status), headers: [:]))
            #expect(!RetryPolicy.isRetryable(http(status), headers: ["x-should-retry": "true"]), "\(status)")
        }
    }

    @Test func aServerErrorNamingAMissingKeyIsTreatedLikeA401() {
        let missing = #"{"error": {"message": "Missing API key: set the Authorization header", "type": "auth"}}"#
        #expect(!RetryPolicy.isRetryable(http(500, missing), headers: [:]))
        #expect(!RetryPolicy.isRetryable(http(502, #"{"error": "api_key is required"}"#), headers: [:]))
        #expect(RetryPolicy.isRetryable(http(500, #"{"error": {"message": "internal error"}}"#), headers: [:]))
        #expect(RetryPolicy.isRetryable(http(503, "model is loading"), headers: [:]))
        #expect(RetryPolicy.isRetryable(http(500), headers: [:]))
    }

    @Test func decideGivesUpAtOnceOnAMissingKey() {
        let decision = RetryPolicy.decide(http(401), headers: [:], attempts: 1, firstSeen: .init(timeIntervalSince1970: 0),
                                          now: .init(timeIntervalSince1970: 1), settings: RetrySettings(), random: 0)
        #expect(decision == .giveUp(.notRetryable))
    }
}
