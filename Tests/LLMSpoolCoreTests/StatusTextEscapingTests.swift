import Foundation
import Testing
@testable import LLMSpoolCore

/// A provider's words reach `status` and `queue` (the last error, why a request waits):
/// their control characters are escaped, as in the log and the live line of `wait`.
/// Before, an ESC sequence cleared the operator's screen and a CR/LF forged status lines.
@Suite struct StatusTextEscapingTests {
    static let hostile = "boom\u{1B}[2J\u{1B}]0;owned\u{07}\r\ndone 9  failed 0\u{202E}"

    @Test func statusEscapesTheLastError() {
        var summary = StatusSummary()
        summary.waiting = [.init(id: "r", nextAttemptAt: nil, attempts: 1, lastError: Self.hostile, reason: nil)]
        let text = summary.text()
        #expect(!text.contains("\u{1B}") && !text.contains("\r") && !text.contains("\u{202E}"))
        #expect(text.contains("last error: boom\\x1b[2J"))
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("done 9") }.isEmpty, "no forged line")
    }

    @Test func queueEscapesTheReason() {
        let entry = QueueEntry(id: "r", state: .deferred, bytes: 1, since: Date(), attempts: 1, endpoint: nil, reason: Self.hostile)
        let text = QueueEntry.table([entry])
        #expect(!text.contains("\u{1B}") && !text.contains("\r") && !text.contains("\u{202E}"))
        #expect(text.contains("boom\\x1b[2J"))
    }

    /// A held spool's folders cannot say whether a daemon runs: "not running" would send the
    /// operator to start a second one.
    @Test func aHeldSpoolWithoutAReadableStatusSaysTheDaemonIsUnknown() {
        var summary = StatusSummary()
        #expect(summary.text().hasPrefix("daemon: not running"))
        summary.spoolProblem = "the spool's folder /s/state is a symbolic link; ..."
        let text = summary.text()
        #expect(text.hasPrefix("daemon: unknown (the spool is held"), "\(text)")
        #expect(text.contains("spool held, nothing is sent: the spool's folder /s/state is a symbolic link"))
    }
}
