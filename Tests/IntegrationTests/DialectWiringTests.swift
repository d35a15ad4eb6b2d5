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

    /// An envelope's body, and only its body, reaches the endpoint, whichever way it is
    /// prepared: read whole (small), sent from the file in place (large), with the usage
    /// member spliced in, or rewritten for an endpoint's model.
    @Test(arguments: [(40, true, false), (200_000, true, false), (200_000, false, false), (200_000, true, true), (40, false, true)])
    func anEnvelopeSendsItsBodyOnly(promptSize: Int, stream: Bool, rewrite: Bool) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        var endpoint: [String: Any] = ["name": "stub", "base_url": harness.stubURL]
        if rewrite { endpoint["model"] = "other-model" }
        try harness.startDaemon(config: ["endpoints": [endpoint]])
        let prompt = String(repeating: "é", count: promptSize / 2)
        let envelope: [String: Any] = ["custom_id": "c-1", "method": "POST", "url": "/v1/chat/completions",
                                       "body": Harness.request(prompt, stream: stream)]
        // The byte order mark and the blanks around the body are the file's, not the body's.
        let bytes = [0xEF, 0xBB, 0xBF] + Array("  ".utf8) + Array(try JSONSerialization.data(withJSONObject: envelope)) + Array("\n".utf8)
        try harness.drop("env", bytes: bytes)
        try waitUntil("env has a result", timeout: 60) {
            FileManager.default.fileExists(atPath: harness.layout.result("env"))
                || !harness.files(in: harness.layout.failed).isEmpty
        }
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.files(in: harness.layout.failed))")
        let result = try harness.json(harness.layout.result("env"))
        let choices = try #require(result["choices"] as? [[String: Any]])
        let content = try #require((choices.first?["message"] as? [String: Any])?["content"] as? String)
        #expect(content.hasPrefix("Echo: " + prompt), "the endpoint did not get the body's prompt")
        try SDKJudge.expectParses("ChatCompletion", [harness.layout.result("env")])
        if stream { #expect((result["usage"] as? [String: Any])?["total_tokens"] is Int, "the usage member was not added to the body") }
    }
}
