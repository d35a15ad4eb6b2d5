import Foundation
import LLMSpoolCore
import Testing

/// The live line of `submit --wait` says what `show` says: the state's one word, the
/// attempt, the token rate, and for a waiting request when it tries again and why.
@Suite struct ProgressLineTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    @Test func inFlightShowsTheAttemptAndTheRate() {
        let line = RequestFollower.Progress(state: .inFlight, elapsed: 3.25, tokensPerSecond: 41.6, attempt: 2).line(now: now)
        #expect(line == "in-flight  3.2s  attempt 2  42 tok/s")
    }

    @Test func waitingShowsWhenAndWhy() {
        let progress = RequestFollower.Progress(state: .deferred, elapsed: 10, attempt: 4, nextAttemptAt: now.addingTimeInterval(29.6),
                                                lastError: "the endpoint answered HTTP 503")
        #expect(progress.line(now: now) == "waiting  10.0s  attempt 4  next attempt in 30s  after: the endpoint answered HTTP 503")
    }

    @Test func queuedHasNoRateAndNoNextAttempt() {
        #expect(RequestFollower.Progress(state: .queued, elapsed: 0.5, attempt: 1).line(now: now) == "queued  0.5s  attempt 1")
    }

    @Test func aQueuedRequestSaysWhatItWaitsFor() {
        var progress = RequestFollower.Progress(state: .queued, elapsed: 2, attempt: 2, lastError: "HTTP 503")
        progress.waitingFor = "endpoint stub cooling down until 08:00:00 (3 failures in a row)"
        #expect(progress.line(now: now) == "queued  2.0s  attempt 2  after: HTTP 503  (endpoint stub cooling down until 08:00:00 (3 failures in a row))")
        progress.state = .inFlight
        #expect(!progress.line(now: now).contains("cooling"), "in flight, a wait is over")
    }
}
