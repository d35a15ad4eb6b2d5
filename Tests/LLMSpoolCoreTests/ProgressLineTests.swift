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

/// `--progress` without a terminal: one line per change, and the rate once a second.
@Suite struct ProgressPrinterTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    @Test func linesComeOnlyWhenSomethingChanges() {
        var printer = ProgressPrinter(mode: .lines)
        let queued = RequestFollower.Progress(state: .queued, elapsed: 0.1, attempt: 1)
        #expect(printer.output(for: queued, now: now) == "queued  0.1s  attempt 1\n")
        var later = queued
        later.elapsed = 0.3
        #expect(printer.output(for: later, now: now) == nil, "only the time moved")
        let flying = RequestFollower.Progress(state: .inFlight, elapsed: 0.5, tokensPerSecond: 20, attempt: 1)
        #expect(printer.output(for: flying, now: now) == "in-flight  0.5s  attempt 1  20 tok/s\n")
        var faster = flying
        faster.elapsed = 0.9
        #expect(printer.output(for: faster, now: now) == nil, "the rate at most once a second")
        faster.elapsed = 1.6
        faster.tokensPerSecond = 30
        #expect(printer.output(for: faster, now: now) == "in-flight  1.6s  attempt 1  30 tok/s\n")
        var retry = RequestFollower.Progress(state: .deferred, elapsed: 2, attempt: 2, nextAttemptAt: now.addingTimeInterval(3), lastError: "refused")
        #expect(printer.output(for: retry, now: now) == "waiting  2.0s  attempt 2  next attempt in 3s  after: refused\n")
        retry.waitingFor = "endpoint a cooling down until 08:00:00 (3 failures in a row)"
        #expect(printer.output(for: retry, now: now)?.hasSuffix("(endpoint a cooling down until 08:00:00 (3 failures in a row))\n") == true,
                "a new reason is news")
    }

    @Test func theTerminalLineIsRewrittenEveryTimeAndNoneSaysNothing() {
        var terminal = ProgressPrinter(mode: .terminal)
        let queued = RequestFollower.Progress(state: .queued, elapsed: 0.1, attempt: 1)
        #expect(terminal.output(for: queued, now: now) == "\r\u{1B}[Kqueued  0.1s  attempt 1")
        #expect(terminal.output(for: queued, now: now) == "\r\u{1B}[Kqueued  0.1s  attempt 1")
        var none = ProgressPrinter(mode: .none)
        #expect(none.output(for: queued, now: now) == nil)
    }

    @Test func theModeFollowsTheTerminalAndTheSwitch() {
        #expect(ProgressMode(forced: false, stderrIsTerminal: true) == .terminal)
        #expect(ProgressMode(forced: true, stderrIsTerminal: true) == .terminal)
        #expect(ProgressMode(forced: true, stderrIsTerminal: false) == .lines)
        #expect(ProgressMode(forced: false, stderrIsTerminal: false) == .none)
    }
}
