import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// The counts the daemon keeps for `status` on a large spool.
@Suite struct SpoolTotalsTests {
    @Test func theCountAtStartPlusWhatFinishedSince() {
        let counted = SpoolTotals(done: 1_000_000, failed: 7, tokens: ["total_tokens": 50])
        let then = SpoolTotals(done: 3, failed: 1, tokens: ["total_tokens": 10])
        let now = SpoolTotals(done: 5, failed: 1, tokens: ["total_tokens": 25, "prompt_tokens": 4])
        #expect(counted.adding(from: then, to: now) == SpoolTotals(done: 1_000_002, failed: 7, tokens: ["total_tokens": 65, "prompt_tokens": 4]))
        let batched = SpoolTotals(done: 2, tokens: ["input_tokens": 30], batchTokens: ["input_tokens": 10])
        #expect(batched.adding(from: SpoolTotals(batchTokens: ["input_tokens": 5]), to: SpoolTotals(tokens: ["input_tokens": 7], batchTokens: ["input_tokens": 12]))
                == SpoolTotals(done: 2, tokens: ["input_tokens": 37], batchTokens: ["input_tokens": 17]), "the batch lane's part is kept the same way")
    }

    @Test func totalsTravelInTheLiveStatus() throws {
        let layout = SpoolLayout(root: FileManager.default.temporaryDirectory.appendingPathComponent("totals-\(UUID())").path)
        try layout.create()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        var status = LiveStatus(pid: getpid(), updatedAt: Date(), queued: 0, deferred: 0, inFlight: [])
        status.totals = SpoolTotals(done: 12, failed: 3, tokens: ["completion_tokens": 9, "total_tokens": 20], batchTokens: ["total_tokens": 5])
        try DurableFile.replace(status.encoded(), at: LiveStatus.path(layout), mode: 0o600)
        let read = try #require(LiveStatus.read(layout))
        #expect(read.totals == status.totals)
        let summary = SpoolQuery(layout: layout).summary()
        #expect(summary.done == 12 && summary.failed == 3 && summary.tokens["total_tokens"] == 20, "status takes the daemon's counts")
        #expect(summary.batchTokens == ["total_tokens": 5])
        #expect(summary.text().contains("of which through the background lane (batch rate): total 5"), "\(summary.text())")
    }
}
