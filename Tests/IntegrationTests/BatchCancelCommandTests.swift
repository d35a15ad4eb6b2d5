import Foundation
import LLMSpoolCore
import Testing

/// `llmspool cancel NAME` on a batch file ends it as deleting `outgoing/NAME.jsonl` does:
/// the lines in flight stop, the finished ones stay, the rest end `batch_cancelled`, the
/// summary says `cancelled`, and no line is sent after the cancel but those in flight.
@Suite(.serialized) struct BatchCancelCommandTests {
    @Test(arguments: ["slow", "slow.jsonl"])
    func cancelEndsARunningBatchAsItsDeletionDoes(argument: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let concurrency = 2
        try harness.startDaemon(config: ["concurrency": concurrency])
        let count = 60
        try BatchTests.dropBatch(harness, "slow", (0..<count).map { BatchTests.line("s-\($0)", stub: ["latency_ms": 150]) })
        try waitUntil("some lines are done", timeout: 60) {
            ((try? String(contentsOfFile: harness.layout.batchPartial("slow"), encoding: .utf8)) ?? "").split(separator: "\n").count >= 3
        }
        let cancel = try harness.cli(["cancel", argument, "--spool", harness.layout.root])
        #expect(cancel.status == 0, "\(cancel.stderr)")
        #expect(cancel.stdout.hasPrefix("cancelled batch slow"), "\(cancel.stdout)")
        #expect(!Syscall.isPresent(harness.layout.batchRequest("slow")), "the input is gone, as by a deletion")
        let summary = try BatchTests.waitForSummary(harness, "slow", timeout: 30)
        #expect(summary["status"] as? String == "cancelled")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("slow"))
        #expect(BatchTests.byID(output).count == count, "every line once, cancelled or not")
        let succeeded = Set(output.filter { $0["error"] is NSNull }.compactMap { $0["custom_id"] as? String })
        let cancelled = output.filter { ($0["error"] as? [String: Any])?["code"] as? String == "batch_cancelled" }
        #expect(succeeded.count >= 3 && succeeded.count + cancelled.count == count)
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["completed"] as? Int == succeeded.count && counts["failed"] as? Int == cancelled.count)
        // Every line the stub saw finished, but for those in flight when the cancel came.
        let sent = try harness.stubArrivals().map(\.prompt)
        let unfinished = sent.filter { prompt in !succeeded.contains { "prompt of \($0)" == prompt } }
        #expect(unfinished.count <= concurrency, "no line was sent after the cancel: \(unfinished)")
        #expect(try harness.cli(["cancel", argument, "--spool", harness.layout.root]).status == 1, "nothing left to cancel")
    }

    @Test func aNameOfNoRequestAndNoBatchIsAnError() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let none = try harness.cli(["cancel", "nosuch", "--spool", harness.layout.root])
        #expect(none.status == 1 && none.stderr.contains("nosuch: no request or batch of that name in"), "\(none.stderr)")
        let noBatch = try harness.cli(["cancel", "nosuch.jsonl", "--spool", harness.layout.root])
        #expect(noBatch.status == 1 && noBatch.stderr.contains("no batch \(harness.layout.batchRequest("nosuch"))"), "\(noBatch.stderr)")
        #expect(none.stdout.isEmpty && noBatch.stdout.isEmpty)
    }

    /// A request and a batch of one name: the name means the request, as before batches
    /// could be named; the batch is named on stderr and cancelled by its full name.
    @Test func aRequestComesBeforeABatchOfTheSameName() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.drop("both", Harness.request("a request named like a batch"))
        try BatchTests.dropBatch(harness, "both", [BatchTests.line("b-0")])
        let first = try harness.cli(["cancel", "both", "--spool", harness.layout.root])
        #expect(first.status == 0 && first.stdout == "cancelled both\n", "\(first.stdout)\(first.stderr)")
        #expect(first.stderr.contains("cancel both.jsonl cancels it"))
        #expect(!Syscall.isPresent(harness.layout.request("both")) && Syscall.isPresent(harness.layout.batchRequest("both")))
        let second = try harness.cli(["cancel", "both", "--spool", harness.layout.root])
        #expect(second.status == 0 && second.stdout.hasPrefix("cancelled batch both"), "no request left: the name is the batch's")
        #expect(!Syscall.isPresent(harness.layout.batchRequest("both")))
    }
}
