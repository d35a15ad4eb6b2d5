import Foundation
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// The Responses, completions and embeddings dialects (and chat beside them) through the
/// real daemon and the stub: each result parsed by the official SDK's own type, faults in
/// the middle of each stream retried with the text exactly once, fallback within a dialect.
@Suite(.serialized) struct OpenAIDialectTests {
    struct Case: Sendable, CustomStringConvertible {
        var url: String
        var sdkType: String
        var stream: Bool
        var description: String { "\(url)\(stream ? " streamed" : "")" }
        var id: String { (DialectRegistry.dialect(url: url)?.id ?? "x").replacingOccurrences(of: ".", with: "-") + (stream ? "-stream" : "-plain") }
    }

    static let cases = [
        Case(url: "/v1/chat/completions", sdkType: "ChatCompletion", stream: false),
        Case(url: "/v1/chat/completions", sdkType: "ChatCompletion", stream: true),
        Case(url: "/v1/responses", sdkType: "Response", stream: false),
        Case(url: "/v1/responses", sdkType: "Response", stream: true),
        Case(url: "/v1/completions", sdkType: "Completion", stream: false),
        Case(url: "/v1/completions", sdkType: "Completion", stream: true),
        Case(url: "/v1/embeddings", sdkType: "CreateEmbeddingResponse", stream: false),
    ]

    /// A request of the dialect `url` names, in an envelope, echoing `prompt`.
    static func envelope(_ url: String, prompt: String, stream: Bool, stub: [String: Any]? = nil) -> [String: Any] {
        var body: [String: Any] = ["model": "stub-model"]
        switch url {
        case "/v1/responses": body["input"] = [["role": "user", "content": [["type": "input_text", "text": prompt]]]]
        case "/v1/completions": body["prompt"] = prompt
        case "/v1/embeddings": body["input"] = [prompt, prompt + " again"]
        default: body["messages"] = [["role": "user", "content": prompt]]
        }
        if stream { body["stream"] = true }
        if let stub { body["stub"] = stub }
        return ["custom_id": "c-\(prompt.count)", "method": "POST", "url": url, "body": body]
    }

    static func dialect(_ url: String) throws -> any Dialect { try #require(DialectRegistry.dialect(url: url)) }

    func waitForOutcomes(_ harness: Harness, _ ids: [String], timeout: TimeInterval = 60) throws {
        try waitUntil("\(ids) have an outcome", timeout: timeout) {
            ids.allSatisfy { FileManager.default.fileExists(atPath: harness.layout.result($0)) || FileManager.default.fileExists(atPath: harness.layout.errorRecord($0)) }
        }
    }

    /// The data of every event of a raw stream, one JSON a line.
    func eventLines(_ path: String) throws -> String {
        let raw = String(decoding: try FileReader.prefix(path: path, limit: 1 << 20), as: UTF8.self)
        return raw.split(separator: "\n").filter { $0.hasPrefix("data: ") }.map { $0.dropFirst(6) }.joined(separator: "\n") + "\n"
    }

    @Test func eachDialectPlainAndStreamedParsesAsItsSDKType() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        for item in Self.cases {
            try harness.drop(item.id, Self.envelope(item.url, prompt: "say \(item.id)", stream: item.stream))
        }
        try harness.drop("embeddings-stream", Self.envelope("/v1/embeddings", prompt: "no stream", stream: true))
        try waitForOutcomes(harness, Self.cases.map(\.id) + ["embeddings-stream"])
        for item in Self.cases {
            let path = harness.layout.result(item.id)
            #expect(FileManager.default.fileExists(atPath: path), "\(item) has no result: \(harness.files(in: harness.layout.failed))")
            guard FileManager.default.fileExists(atPath: path) else { continue }
            try SDKJudge.expectParses(item.sdkType, [path])
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            if item.url == "/v1/embeddings" {
                #expect(EmbeddingsDialect.summary(ofResult: bytes) == "2 embeddings of 8 dimensions")
            } else {
                #expect(try Self.dialect(item.url).answerText(ofResult: bytes) == StubAnswer.content(prompt: "say \(item.id)", tokens: 8), "\(item)")
            }
            #expect(try harness.arrivalPaths(of: "say \(item.id)") == [item.url], "\(item) went to its dialect's path")
            let usage = try #require(try harness.record(item.id)["usage"] as? [String: Int], "\(item) recorded no usage")
            #expect(usage["input"] != nil, "\(item): \(usage)")
            if item.url != "/v1/embeddings" { #expect(usage["output"] == 8, "\(item): \(usage)") }
        }
        // The raw stream of a Responses answer is the API's own events.
        let events = harness.root + "/responses-events.jsonl"
        try eventLines(harness.layout.rawStream("responses-stream")).write(toFile: events, atomically: false, encoding: .utf8)
        try SDKJudge.expectParses("ResponseStreamEvent", [events], jsonl: true)
        // `status` adds the dialects up under the common names: six answers of 8 tokens.
        let status = try harness.cli(["status", "--json", "--spool", harness.layout.root])
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let tokens = try #require(summary["tokens"] as? [String: Int])
        #expect(tokens["output"] == 6 * 8, "\(tokens)")
        #expect(tokens["completion_tokens"] == 4 * 8, "chat's and completions' own names stay: \(tokens)")
        #expect(tokens["input"].map { $0 > 0 } == true)
        let refused = try harness.json(harness.layout.errorRecord("embeddings-stream"))
        #expect(refused["kind"] as? String == "invalid-request")
        #expect((refused["message"] as? String)?.contains("do not stream") == true, "\(refused)")
    }

    /// A cut, a stall and an error event, each in the middle of a Responses or completions
    /// stream: retried, and the text appears in the result exactly once.
    @Test(arguments: ["/v1/responses", "/v1/completions"])
    func faultsMidStreamAreRetriedAndTheTextAppearsOnce(url: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["idle_timeout_seconds": 1])
        let faults: [(String, [String: Any], String)] = [
            ("cut", ["cut_after": 7], "transport"),
            ("stall", ["stall_ms": 6000, "keepalive_ms": 100], "transport"),
            ("error", ["error_in_stream": true], "provider-error"),
        ]
        for (name, fault, _) in faults {
            try harness.drop(name, Self.envelope(url, prompt: "fault \(name)", stream: true, stub: ["faults": [fault]]))
        }
        try waitForOutcomes(harness, faults.map(\.0))
        let dialect = try Self.dialect(url)
        for (name, _, outcome) in faults {
            let path = harness.layout.result(name)
            #expect(FileManager.default.fileExists(atPath: path), "\(name) failed: \((try? harness.json(harness.layout.errorRecord(name))) ?? [:])")
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            let expected = StubAnswer.content(prompt: "fault \(name)", tokens: 8)
            #expect(dialect.answerText(ofResult: bytes) == expected, "\(name)")
            #expect(String(decoding: bytes, as: UTF8.self).components(separatedBy: " tök3").count == 2, "\(name): the text is in the result once")
            // The raw stream is the last attempt's alone: each delta once.
            let raw = String(decoding: try FileReader.prefix(path: harness.layout.rawStream(name), limit: 1 << 20), as: UTF8.self)
            let deltas = raw.split(separator: "\n").filter { $0.hasPrefix("data: ") }.compactMap { dialect.textDelta(ofEvent: Array($0.dropFirst(6).utf8)) }
            #expect(deltas.joined() == expected, "\(name)")
            try SDKJudge.expectParses(url == "/v1/responses" ? "Response" : "Completion", [path])
            let attempts = try #require(try harness.record(name)["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["outcome"] as? String } == [outcome, "ok"], "\(name)")
            #expect(try harness.arrivalPaths(of: "fault \(name)") == [url, url])
        }
    }

    /// A Responses answer longer than what is held in memory: its terminal response goes to
    /// the result's temporary as it arrives; a first attempt cut in the middle leaves
    /// nothing, and the result holds the whole text once.
    @Test func aLongResponsesAnswerCutOnceIsWholeAndOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let tokens = 10_000
        try harness.drop("long", Self.envelope("/v1/responses", prompt: "a long answer", stream: true,
                                               stub: ["tokens": tokens, "faults": [["cut_after": tokens / 2]]]))
        try waitForOutcomes(harness, ["long"], timeout: 120)
        let path = harness.layout.result("long")
        try #require(FileManager.default.fileExists(atPath: path), "no result: \((try? harness.json(harness.layout.errorRecord("long"))) ?? [:])")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.count > 80 * 1024, "the answer is longer than the 64 KiB held before it is spilled")
        #expect(try Self.dialect("/v1/responses").answerText(ofResult: bytes) == StubAnswer.content(prompt: "a long answer", tokens: tokens))
        try SDKJudge.expectParses("Response", [path])
        let attempts = try #require(try harness.record("long")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["outcome"] as? String } == ["transport", "ok"])
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasPrefix(".") || $0.hasSuffix(".partial") }.isEmpty)
    }

    /// A request that fails at the first endpoint goes to the second, at its own dialect's
    /// path, and its result is still that dialect's object. (No model rewrite: the stub
    /// counts attempts by body, and a rewritten body would be a first attempt again.)
    @Test(arguments: ["/v1/responses", "/v1/completions", "/v1/embeddings"])
    func fallbackStaysWithinTheDialect(url: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [
            ["name": "primary", "base_url": harness.stubURL],
            ["name": "secondary", "base_url": harness.stubURL],
        ]])
        try harness.drop("fallback", Self.envelope(url, prompt: "fall back", stream: url != "/v1/embeddings", stub: ["faults": [["status": 503]]]))
        try waitForOutcomes(harness, ["fallback"])
        let path = harness.layout.result("fallback")
        try #require(FileManager.default.fileExists(atPath: path), "no result: \((try? harness.json(harness.layout.errorRecord("fallback"))) ?? [:])")
        let record = try harness.record("fallback")
        #expect(record["endpoint"] as? String == "secondary")
        let attempts = try #require(record["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["endpoint"] as? String } == ["primary", "secondary"])
        #expect(try harness.arrivalPaths(of: "fall back") == [url, url])
        let type = ["/v1/responses": "Response", "/v1/completions": "Completion", "/v1/embeddings": "CreateEmbeddingResponse"][url]!
        try SDKJudge.expectParses(type, [path])
    }

    /// `submit --wait` prints each dialect's text as it streams (an embedding: one line of
    /// count and dimensions); `wait` on the finished request, whose file is gone, reads the
    /// result the same way from the task record's dialect; `show` names the dialect.
    @Test(arguments: ["/v1/responses", "/v1/completions", "/v1/embeddings"])
    func submitWaitPrintsTheDialectsTextAndShowNamesIt(url: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let prompt = "print \(url)"
        let stream = url != "/v1/embeddings"
        let envelope = Self.envelope(url, prompt: prompt, stream: stream, stub: ["tokens": 10, "token_delay_ms": 20])
        let input = String(decoding: try JSONSerialization.data(withJSONObject: envelope), as: UTF8.self)
        let finished = try harness.cli(["submit", "-", "--wait", "--id", "live", "--spool", harness.layout.root, "--timeout", "60"], stdin: input)
        #expect(finished.status == 0, "\(finished.stderr)")
        let expected = stream ? StubAnswer.content(prompt: prompt, tokens: 10) : "2 embeddings of 8 dimensions\n"
        #expect(finished.stdout == expected, "stdout carries the answer's text and nothing else")
        let again = try harness.cli(["wait", "live", "--spool", harness.layout.root, "--timeout", "30"])
        #expect(again.stdout == expected, "a finished request is read as its dialect from its record")
        let shown = try harness.cli(["show", "live", "--spool", harness.layout.root])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any], "\(shown.stdout)")
        #expect(object["dialect"] as? String == DialectRegistry.dialect(url: url)?.id)
    }
}
