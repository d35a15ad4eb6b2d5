import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// A FIFO where a file of `state/` is expected is refused when read, never waited on:
/// opened without `O_NONBLOCK` it blocked `status`, `queue`, `show` and the daemon's start.
@Suite(.serialized) struct FIFOInStateTests {
    @Test(arguments: [["status"], ["queue"], ["show", "q1"]])
    func aCommandReturnsWhenTheLiveStatusIsAFIFO(_ command: [String]) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.drop("q1", Harness.request("waits"))
        try #require(mkfifo(harness.layout.liveStatus, 0o600) == 0)
        // Under `timeout`: blocked, the command would hold the test for ever.
        let finished = try Harness.spawnAndWait(["/usr/bin/timeout", "10", Harness.binary] + command + ["--spool", harness.layout.root])
        #expect(finished.status == 0, "\(command) exited \(finished.status) (124: still blocked after 10 s): \(finished.stderr)")
    }

    @Test func statusReturnsWhenATaskRecordIsAFIFO() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.drop("q1", Harness.request("waits"))
        try #require(mkfifo(harness.layout.taskRecord("q1"), 0o600) == 0)
        let finished = try Harness.spawnAndWait(["/usr/bin/timeout", "10", Harness.binary, "status", "--spool", harness.layout.root])
        #expect(finished.status == 0, "exited \(finished.status) (124: still blocked after 10 s): \(finished.stderr)")
    }

    @Test func theDaemonStartsAndAnswersWhenItsRunMarkIsAFIFO() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try #require(mkfifo(harness.layout.runMark, 0o600) == 0)
        try harness.startDaemon()
        try harness.drop("after", Harness.request("answered past a FIFO"))
        try waitUntil("the request is answered", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("after")) }
    }
}
