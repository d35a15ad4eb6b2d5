import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolSystem
import Testing

/// A daemon started on a full disk waits for space, as a running one does: before, the
/// write of its run mark (`state/.run`) failed and it exited, for a supervisor to restart
/// it in a loop.
extension CrashSafetyTests {
    @Test(.enabled(if: Harness.isRoot, "mounting a small tmpfs needs root"))
    func aStartOnAFullDiskWaitsForSpaceThenAnswers() throws {
        let harness = try Harness(tmpfsBytes: 4 << 20)
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["min_free_bytes": 0])
        #expect(harness.stopDaemon() == 0)
        try #require(harness.log.contains("commit_order=result-marked"), "the run mark is written in the one-fsync order only")
        try harness.drop("waits", Harness.request("sent once there is room"))
        let filler = harness.layout.root + "/filler"
        try fill(filler, leaving: 0, on: harness.layout.root)
        try harness.startDaemon(config: ["min_free_bytes": 0], arguments: ["--metrics", "127.0.0.1:0"], waitUntilWatching: false)
        try waitUntil("the start waits for space", timeout: 20) { harness.log.contains("the spool's disk is full; the daemon starts once") }
        #expect(harness.daemon?.isRunning == true)
        let unwritable = #"llmspool_spool_held{reason="unwritable"}"#
        #expect(try harness.metric(unwritable, port: try harness.metricsPort()) == 1, "the wait shows in the metrics")
        // The power-loss pass reads every recent result: it is not run again while nothing
        // changed (it was, every half second).
        usleep(3_000_000)
        #expect(!harness.log.contains("the start tries again"), "\(harness.log)")
        try Syscall.unlink(filler)
        try waitUntil("the request is answered once there is room", timeout: 20) { exists(harness.layout.result("waits")) }
        #expect(harness.log.contains("the start tries again reason=\"the spool's disk has more room\""), "\(harness.log)")
        #expect(try harness.arrivals(of: "sent once there is room").count == 1)
        #expect(try harness.metric(unwritable, port: try harness.metricsPort()) == 0)
    }

    @Test(.enabled(if: Harness.isRoot, "mounting a small tmpfs needs root"))
    func aStopEndsAStartThatWaitsForSpace() throws {
        let harness = try Harness(tmpfsBytes: 4 << 20)
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["min_free_bytes": 0])
        #expect(harness.stopDaemon() == 0)
        let filler = harness.layout.root + "/filler"
        try fill(filler, leaving: 0, on: harness.layout.root)
        try harness.startDaemon(config: ["min_free_bytes": 0], waitUntilWatching: false)
        try waitUntil("the start waits for space", timeout: 20) { harness.log.contains("the spool's disk is full; the daemon starts once") }
        harness.signalDaemon(SIGTERM)
        try waitUntil("the daemon stops", timeout: 10) { harness.daemon?.isRunning == false }
        #expect(harness.daemon?.terminationStatus == 0)
        #expect(harness.log.contains("stopped before the start ended"))
    }

    /// The disk fills while a batch runs: `status` still shows the daemon's own view, with
    /// why the batch's lines wait. Before, the status file's rewrite needed a new file, which
    /// a full disk refused: `status` said the status was last written seconds ago, counted
    /// from the journals, and showed no `commit_problem`.
    @Test(.enabled(if: Harness.isRoot, "mounting a small tmpfs needs root"))
    func statusShowsWhyABatchWaitsOnAFullDisk() throws {
        let harness = try Harness(tmpfsBytes: 4 << 20)
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["min_free_bytes": 0, "concurrency": 2])
        let count = 60
        try BatchTests.dropBatch(harness, "full", (0..<count).map { BatchTests.line("f-\($0)", stub: ["latency_ms": 100]) })
        try waitUntil("some lines are done", timeout: 30) { ((try? BatchTests.reported(harness, "full"))?["done"] as? Int ?? 0) >= 2 }
        let filler = harness.layout.root + "/filler"
        try fill(filler, leaving: 0, on: harness.layout.root)
        var shown: [String: Any] = [:]
        try waitUntil("status says why the lines wait", timeout: 30) {
            shown = (try? BatchTests.reported(harness, "full")) ?? [:]
            return (shown["commit_problem"] as? String)?.contains("No space left on device") == true
        }
        #expect(shown["from_journal"] == nil, "the daemon's own view: \(shown)")
        let text = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(text.contains("full: ") && text.contains("No space left on device"), "\(text)")
        #expect(!text.contains("its status was last written"), "\(text)")
        try Syscall.unlink(filler)
        let summary = try BatchTests.waitForSummary(harness, "full", timeout: 60)
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("full"))
        #expect(output.count == count && BatchTests.byID(output).count == count, "every line once")
        // The status file, written over itself while the disk was full, is read whole again.
        let status = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: LiveStatus.path(harness.layout))))
                                  as? [String: Any])
        #expect(status["pid"] as? Int == Int(harness.daemon?.processIdentifier ?? -1))
    }
}

