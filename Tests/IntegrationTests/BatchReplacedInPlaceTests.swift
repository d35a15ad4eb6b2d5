import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolModel
import Testing

/// A running batch whose input is changed in place (the same inode): the batch holds that
/// very file open, so what it reads at the validated offsets is no longer the batch it
/// accepted. It ends cancelled with every line once all the same, then the changed file is
/// judged as a new batch.
@Suite(.serialized) struct BatchReplacedInPlaceTests {
    /// Truncation leaves lines in flight and queued whose offsets are past the new end: their
    /// custom_ids cannot be read from the input any more and come from the batch's list.
    @Test func aBatchTruncatedInPlaceEndsCancelledWithEveryLineOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 4, "settle_seconds": 0.5])
        let count = 100
        let name = "trunc"
        try BatchTests.dropBatch(harness, name, (0..<count).map { BatchTests.line("t-\($0)", stub: ["latency_ms": 400]) })
        try waitUntil("some lines are done", timeout: 60) {
            ((try? String(contentsOfFile: harness.layout.batchPartial(name), encoding: .utf8)) ?? "").split(separator: "\n").count >= 8
        }
        let input = harness.layout.batchRequest(name)
        let inode = try Syscall.lstat(input).st_ino
        #expect(Glibc.truncate(input, 2000) == 0, "truncate: errno \(errno)")
        #expect(try Syscall.lstat(input).st_ino == inode, "cut short in place")

        let summary = try BatchTests.waitForSummary(harness, name, timeout: 30)
        #expect(summary["status"] as? String == "cancelled")
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["total"] as? Int == count)
        let output = try BatchTests.outputLines(harness.layout.batchOutput(name))
        let found = BatchTests.byID(output)
        #expect(output.count == count && found.count == count, "one line per input line: \(output.count) lines, \(found.count) ids")
        for index in 0..<count {
            guard let line = found["t-\(index)"] else {
                Issue.record("t-\(index) has no output line")
                continue
            }
            let code = (line["error"] as? [String: Any])?["code"] as? String
            #expect(line["error"] is NSNull || code == "batch_cancelled", "t-\(index): \(line)")
        }
        let succeeded = output.filter { $0["error"] is NSNull }.count
        #expect(counts["completed"] as? Int == succeeded)
        #expect(counts["failed"] as? Int == count - succeeded)

        // The cut file, a line broken off at its end, is a new batch: refused as invalid.
        try waitUntil("the truncated file is refused", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.failedBatch(name))
        }
        #expect(!FileManager.default.fileExists(atPath: input))
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchPartial(name)))
        let record = try harness.json(harness.layout.batchErrorRecord(name))
        #expect(record["kind"] as? String == "invalid-batch", "\(record)")
    }
}
