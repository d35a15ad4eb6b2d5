import Testing
@testable import LLMSpoolModel

/// A response may bury the headers the daemon reads under a hundred others.
@Suite struct HeaderKeepingTests {
    @Test func theHeadersReadAreKeptPastTheFirstHundred() {
        #expect(HeaderLine.keeps("x-anything", having: 99))
        #expect(!HeaderLine.keeps("x-anything", having: 100))
        for name in ["retry-after", "retry-after-ms", "x-ratelimit-reset-requests", "anthropic-ratelimit-requests-reset", "x-request-id"] {
            #expect(HeaderLine.keeps(name, having: 150), "\(name)")
            #expect(!HeaderLine.keeps(name, having: 200), "\(name): bounded all the same")
        }
    }
}
