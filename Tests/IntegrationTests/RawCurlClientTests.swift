import Testing
@testable import llmspool_bench

/// The bench's reference client checks libcurl as the daemon does.
@Suite struct RawCurlClientTests {
    /// libcurl refuses a URL over 8 MB at `curl_easy_setopt`: the run stops with that
    /// refusal, every request counted unanswered, instead of measuring requests that were
    /// never the ones meant.
    @Test func aRefusedOptionStopsTheRunWithItsError() {
        let run = RawCurlClient.run(url: String(repeating: "x", count: 9_000_000), bodies: [[0x7B, 0x7D]], concurrency: 1)
        #expect(run.error?.hasPrefix("curl_easy_setopt(URL)") == true, "\(String(describing: run.error))")
        #expect(run.failed == 1)
    }

    /// A transfer's own failure is a measured outcome, counted, not an error of the client.
    @Test func anUnansweredRequestCountsAsFailed() {
        // Port 9 on loopback (discard) has no listener here: each connection is refused.
        let run = RawCurlClient.run(url: "http://127.0.0.1:9/v1/chat/completions", bodies: [[0x7B, 0x7D], [0x7B, 0x7D]], concurrency: 2)
        #expect(run.failed == 2)
        #expect(run.error == nil)
    }
}
