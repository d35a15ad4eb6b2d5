import Foundation
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Anthropic Messages through the real daemon and the stub: results the anthropic SDK
/// parses, faults retried with the text once, routing that stays within the dialect, and
/// the key sent as Anthropic takes it.
@Suite(.serialized) struct AnthropicMessagesTests {
    /// A Messages request in the Batch line envelope. The stub checks the key (as x-api-key,
    /// with no Authorization) and the version header when `version` is given.
    static func messages(_ prompt: String, stream: Bool = false, version: String? = "2023-06-01", stub: [String: Any] = [:]) -> [String: Any] {
        var directives = stub
        directives["api_key"] = Harness.secret
        if let version { directives["anthropic_version"] = version }
        var body: [String: Any] = ["model": "messages-stub", "max_tokens": 256, "messages": [["role": "user", "content": prompt]],
                                   "stub": directives]
        if stream { body["stream"] = true }
        return ["custom_id": prompt, "method": "POST", "url": "/v1/messages", "body": body]
    }

    static func text(of message: [String: Any]) -> String? {
        (message["content"] as? [[String: Any]])?.compactMap { $0["type"] as? String == "text" ? $0["text"] as? String : nil }.joined()
    }

    func anthropic(_ harness: Harness, name: String = "anthropic", baseURL: String? = nil, extra: [String: Any] = [:]) -> [String: Any] {
        var endpoint: [String: Any] = ["name": name, "api": "anthropic", "base_url": baseURL ?? harness.stubURL]
        endpoint.merge(extra) { $1 }
        return endpoint
    }

    func waitForOutcome(_ harness: Harness, _ ids: [String], timeout: TimeInterval = 60) throws {
        try waitUntil("\(ids) have an outcome", timeout: timeout) {
            ids.allSatisfy { id in
                FileManager.default.fileExists(atPath: harness.layout.result(id)) || FileManager.default.fileExists(atPath: harness.layout.errorRecord(id))
            }
        }
    }

    func attempts(_ harness: Harness, _ id: String) throws -> [[String: Any]] {
        try #require(try harness.record(id)["attempts"] as? [[String: Any]])
    }

    @Test func plainAndStreamedResultsAreMessagesTheSDKParses() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // The stub's base ends in /v1, as an OpenAI base would: it is not doubled. The
        // version is the endpoint's own, and the stub checks it arrives.
        try harness.startDaemon(config: ["endpoints": [anthropic(harness, extra: ["anthropic_version": "2024-10-22"])]],
                                environment: ["ANTHROPIC_API_KEY": Harness.secret])
        try harness.drop("plain", Self.messages("plain hello", version: "2024-10-22"))
        try harness.drop("streamed", Self.messages("streamed hello", stream: true, version: "2024-10-22", stub: ["tokens": 12]))
        try waitForOutcome(harness, ["plain", "streamed"])
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.files(in: harness.layout.failed)): \(harness.log.suffix(2000))")
        let plain = try harness.json(harness.layout.result("plain"))
        #expect(plain["type"] as? String == "message")
        #expect(Self.text(of: plain) == StubAnswer.content(prompt: "plain hello", tokens: 8))
        let streamed = try harness.json(harness.layout.result("streamed"))
        #expect(Self.text(of: streamed) == StubAnswer.content(prompt: "streamed hello", tokens: 12))
        #expect(streamed["stop_reason"] as? String == "end_turn")
        #expect((streamed["usage"] as? [String: Any])?["output_tokens"] as? Int == 12)
        let raw = String(decoding: try FileReader.prefix(path: harness.layout.rawStream("streamed"), limit: 1 << 20), as: UTF8.self)
        #expect(raw.hasPrefix("event: message_start\n"), "the raw events are kept as they came")
        try SDKJudge.expectParses("Message", [harness.layout.result("plain"), harness.layout.result("streamed")])
        // The usage the task record keeps is the message's own.
        let usage = try #require(try harness.record("streamed")["usage"] as? [String: Any])
        #expect(usage["output_tokens"] as? Int == 12)
        #expect(harness.filesContainingSecret().isEmpty, "\(harness.filesContainingSecret())")
    }

    @Test func aLongStreamedTextIsWrittenWholeAndOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [anthropic(harness)]], environment: ["ANTHROPIC_API_KEY": Harness.secret])
        let bulk = 3 << 20
        try harness.drop("long", Self.messages("a long answer", stream: true, stub: ["bulk_bytes": bulk, "faults": [["cut_after": 1]]]))
        try waitForOutcome(harness, ["long"])
        let text = try #require(Self.text(of: try harness.json(harness.layout.result("long"))))
        let pieces = String(decoding: try FileReader.prefix(path: harness.layout.rawStream("long"), limit: 8 << 20), as: UTF8.self)
            .components(separatedBy: "abcdefghijklmnop").count - 1
        #expect(pieces > bulk / 17)
        #expect(text == String(repeating: "abcdefghijklmnop", count: pieces), "every piece of text is in the result exactly once")
        #expect(try attempts(harness, "long").map { $0["outcome"] as? String } == ["transport", "ok"])
        try SDKJudge.expectParses("Message", [harness.layout.result("long")])
    }

    /// A cut, a stall kept alive with pings, and an in-stream overloaded error: each is
    /// retried, and the text is in the result, and in the kept events, exactly once.
    @Test(arguments: [("cut", "transport"), ("stall", "transport"), ("overloaded", "provider-error")])
    func streamFaultsAreRetriedAndTheTextAppearsOnce(id: String, firstOutcome: String) throws {
        let faults: [String: [String: Any]] = ["cut": ["cut_after": 5], "stall": ["stall_ms": 5000, "keepalive_ms": 100],
                                               "overloaded": ["error_in_stream": true]]
        let fault = faults[id]!
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [anthropic(harness)], "idle_timeout_seconds": 1],
                                environment: ["ANTHROPIC_API_KEY": Harness.secret])
        let prompt = "fault \(id)"
        try harness.drop(id, Self.messages(prompt, stream: true, stub: ["tokens": 6, "faults": [fault]]))
        try waitForOutcome(harness, [id])
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.log.suffix(2000))")
        let result = try harness.json(harness.layout.result(id))
        #expect(Self.text(of: result) == StubAnswer.content(prompt: prompt, tokens: 6))
        let raw = String(decoding: try FileReader.prefix(path: harness.layout.rawStream(id), limit: 1 << 20), as: UTF8.self)
        #expect(raw.components(separatedBy: "Echo: \(prompt)").count == 2, "the kept events restart from zero")
        #expect(raw.components(separatedBy: "event: message_stop").count == 2)
        let outcomes = try attempts(harness, id)
        #expect(outcomes.map { $0["outcome"] as? String } == [firstOutcome, "ok"])
        if id == "stall" { #expect((outcomes.first?["message"] as? String)?.contains("idle") == true, "\(outcomes)") }
        #expect(try harness.arrivals(of: prompt).count == 2)
        try SDKJudge.expectParses("Message", [harness.layout.result(id)])
    }

    @Test func overloaded529IsRetried() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [anthropic(harness)]], environment: ["ANTHROPIC_API_KEY": Harness.secret])
        try harness.drop("busy", Self.messages("busy", stub: ["faults": [["status": 529]]]))
        try waitForOutcome(harness, ["busy"])
        let outcomes = try attempts(harness, "busy")
        #expect(outcomes.map { $0["outcome"] as? String } == ["http", "ok"])
        #expect(outcomes.first?["http_status"] as? Int == 529)
        try SDKJudge.expectParses("Message", [harness.layout.result("busy")])
    }

    /// Two Anthropic endpoints with an OpenAI one between them: the first is down, and a
    /// Messages request falls back to the second, never to the OpenAI one; a chat request
    /// goes to the OpenAI one only.
    @Test func fallbackStaysWithinTheDialect() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [
            anthropic(harness, name: "down", baseURL: "http://127.0.0.1:1"),
            ["name": "openai", "base_url": harness.stubURL],
            anthropic(harness, name: "up"),
        ], "cooldown_after_failures": 1, "cooldown_seconds": 60], environment: ["ANTHROPIC_API_KEY": Harness.secret])
        try harness.drop("m1", Self.messages("first message"))
        try waitForOutcome(harness, ["m1"])
        // The first endpoint is cooling down now: the next goes straight to the second.
        try harness.drop("m2", Self.messages("second message", stream: true))
        try harness.drop("chat", Harness.request("a chat request"))
        try waitForOutcome(harness, ["m2", "chat"])
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.log.suffix(2000))")
        #expect(try attempts(harness, "m1").map { $0["endpoint"] as? String } == ["down", "up"])
        #expect(try attempts(harness, "m1").map { $0["outcome"] as? String } == ["transport", "ok"])
        #expect(try attempts(harness, "m2").map { $0["endpoint"] as? String } == ["up"])
        #expect(try attempts(harness, "chat").map { $0["endpoint"] as? String } == ["openai"])
        #expect(Harness.content(of: try harness.json(harness.layout.result("chat"))) == StubAnswer.content(prompt: "a chat request", tokens: 8))
        try SDKJudge.expectParses("Message", [harness.layout.result("m1"), harness.layout.result("m2")])
        try SDKJudge.expectParses("ChatCompletion", [harness.layout.result("chat")])
    }

    @Test func aMessagesRequestWithOnlyAnOpenAIEndpointFailsAsNoEndpoint() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "stub", "base_url": harness.stubURL]]])
        try harness.drop("lost", Self.messages("nobody speaks this"))
        try harness.drop("chat", Harness.request("but this is fine"))
        try waitForOutcome(harness, ["lost", "chat"])
        let record = try harness.json(harness.layout.errorRecord("lost"))
        #expect(record["kind"] as? String == "no-endpoint")
        let message = try #require(record["message"] as? String)
        #expect(message.contains("no endpoint speaks anthropic"), "\(message)")
        #expect(message.contains("(configured: stub (openai))"), "\(message)")
        #expect(FileManager.default.fileExists(atPath: harness.layout.failedRequest("lost")), "the request moves to failed/ beside its record")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.request("lost")))
        #expect(try harness.arrivals(of: "nobody speaks this").isEmpty, "nothing was sent")
        #expect(FileManager.default.fileExists(atPath: harness.layout.result("chat")))
    }

    /// No endpoints list: ANTHROPIC_BASE_URL (as the SDK takes it, without /v1) and
    /// ANTHROPIC_API_KEY define the Anthropic endpoint; the OpenAI one stays for chat.
    @Test func theEnvironmentDefinesTheAnthropicEndpoint() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let root = String(harness.stubURL.dropLast("/v1".count))
        try harness.startDaemon(environment: ["ANTHROPIC_BASE_URL": root, "ANTHROPIC_API_KEY": Harness.secret])
        try harness.drop("m", Self.messages("from the environment"))
        try harness.drop("chat", Harness.request("chat from the config"))
        try waitForOutcome(harness, ["m", "chat"])
        #expect(try attempts(harness, "m").map { $0["endpoint"] as? String } == ["anthropic"])
        #expect(try attempts(harness, "chat").map { $0["endpoint"] as? String } == ["default"])
        try SDKJudge.expectParses("Message", [harness.layout.result("m")])
        let checked = try harness.cli(["check-config", "--config", harness.configPath],
                                      environment: ["ANTHROPIC_BASE_URL": root, "ANTHROPIC_API_KEY": Harness.secret])
        #expect(checked.stdout.contains("endpoint[1] anthropic (anthropic) = \(root)/v1/messages"), "\(checked.stdout)")
        #expect(!checked.stdout.contains(Harness.secret) && !checked.stderr.contains(Harness.secret))
    }

    /// `submit --wait` prints a streamed Messages answer's text deltas and nothing else;
    /// `wait` on the finished request reads the message's text blocks; `show` names the dialect.
    @Test func submitWaitPrintsTheMessagesTextAndShowNamesTheDialect() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [anthropic(harness)]], environment: ["ANTHROPIC_API_KEY": Harness.secret])
        let prompt = "print messages"
        let envelope = Self.messages(prompt, stream: true, stub: ["tokens": 10, "token_delay_ms": 20])
        let input = String(decoding: try JSONSerialization.data(withJSONObject: envelope), as: UTF8.self)
        let finished = try harness.cli(["submit", "-", "--wait", "--id", "live", "--spool", harness.layout.root, "--timeout", "60"], stdin: input)
        #expect(finished.status == 0, "\(finished.stderr)")
        let expected = StubAnswer.content(prompt: prompt, tokens: 10)
        #expect(finished.stdout == expected, "stdout carries the answer's text and nothing else")
        let again = try harness.cli(["wait", "live", "--spool", harness.layout.root, "--timeout", "30"])
        #expect(again.stdout == expected, "a finished request is read as a message from its record")
        let shown = try harness.cli(["show", "live", "--spool", harness.layout.root])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any], "\(shown.stdout)")
        #expect(object["dialect"] as? String == MessagesDialect.id)
    }
}
