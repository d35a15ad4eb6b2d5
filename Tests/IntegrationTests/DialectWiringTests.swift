import Foundation
import LLMSpoolCore
import Testing

/// The chat completions dialect as the running daemon uses it: its usage member reaches
/// the endpoint both ways a body is prepared (spliced into the file's bytes, and merged
/// into a body rewritten for an endpoint's own model).
@Suite(.serialized) struct DialectWiringTests {
    func streamedUsage(endpoint: [String: Any]) throws -> [String: Any]? {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [endpoint.merging(["base_url": harness.stubURL]) { _, url in url }]])
        try harness.drop("usage", Harness.request("count my tokens", stream: true))
        try waitUntil("usage has a result", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("usage"))
        }
        return try harness.json(harness.layout.result("usage"))["usage"] as? [String: Any]
    }

    @Test func aStreamAsksForItsUsageAsSent() throws {
        let usage = try #require(try streamedUsage(endpoint: ["name": "stub"]), "the stream carried no usage: the member was not spliced in")
        #expect(usage["total_tokens"] is Int)
    }

    @Test func aStreamAsksForItsUsageThroughAModelRewrite() throws {
        let usage = try #require(try streamedUsage(endpoint: ["name": "stub", "model": "other-model"]),
                                 "the stream carried no usage: the member was not merged into the rewritten body")
        #expect(usage["total_tokens"] is Int)
    }
}
