import Foundation
import Testing
@testable import LLMSpoolCore

/// The common token names (input, output, cached input, reasoning) in the metrics and in
/// `status`, beside chat's own names, which stay.
@Suite struct CommonUsageTests {
    @Test func metricsCountEveryDialectUnderTheCommonKinds() throws {
        let metrics = Metrics()
        metrics.usage(UsageNames.normalised(["prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details.cached_tokens": 6]))
        metrics.usage(UsageNames.normalised(["input_tokens": 5, "output_tokens": 3, "output_tokens_details.reasoning_tokens": 2]))
        metrics.usage(UsageNames.normalised(["input_tokens": 1, "cache_read_input_tokens": 7, "output_tokens": 2]))
        let text = metrics.render()
        for (kind, count) in [("input", 23), ("output", 9), ("cached_input", 13), ("reasoning", 2), ("prompt", 10), ("completion", 4)] {
            #expect(text.contains("llmspool_tokens_total{kind=\"\(kind)\"} \(count)\n"), "\(kind): \(text)")
        }
        #expect(metrics.finishedTotals().tokens["input"] == 23)
    }

    @Test func statusNamesTheCommonCountsFirst() throws {
        let layout = SpoolLayout(root: FileManager.default.temporaryDirectory.appendingPathComponent("usage-\(UUID())").path)
        try layout.create()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        var summary = SpoolQuery(layout: layout).summary()
        summary.tokens = ["input": 12, "output": 5, "cached_input": 2, "prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10]
        let line = try #require(summary.text().split(separator: "\n").first { $0.hasPrefix("tokens:") })
        #expect(line == "tokens: input 12  output 5  cached input 2  prompt 7  completion 3  total 10")
    }
}
