import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct StubResponderTests {
    let responder = StubResponder(defaults: StubDirectives(tokens: 5))

    func body(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object))
    }

    @Test func aStreamAssemblesToThePlainAnswer() throws {
        let request: [String: Any] = ["model": "m", "messages": [["role": "user", "content": "héllo"]]]
        let plain = responder.respond(method: "POST", path: "/v1/chat/completions", body: body(request))
        #expect(plain.status == 200)
        let plainObject = try #require(JSONObject.parse(plain.pieces.joined().map { $0 }))
        let expected = StubAnswer.content(prompt: "héllo", tokens: 5)
        #expect(expected == "Echo: héllo tök1 tök2 tök3 tök4")
        let plainMessage = ((plainObject["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
        #expect(plainMessage == expected)

        var streamed = request
        streamed["stream"] = true
        let stream = responder.respond(method: "POST", path: "/v1/chat/completions", body: body(streamed))
        #expect(stream.contentType == "text/event-stream")
        var parser = SSEParser()
        var assembler = StreamAssembler()
        parser.feed(stream.pieces.joined()) { assembler.consume($0) }
        parser.finish { assembler.consume($0) }
        #expect(assembler.sawDone)
        guard case .complete(let bytes) = assembler.verdict() else {
            Issue.record("the stub's stream must be complete")
            return
        }
        let assembled = try #require(JSONObject.parse(bytes))
        let content = ((assembled["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
        #expect(content == expected)
        #expect((assembled["id"] as? String)?.hasPrefix("chatcmpl-stub-") == true)
    }

    @Test func directivesInjectStatusAndLength() throws {
        let request: [String: Any] = ["model": "m", "messages": [], "stub": ["status": 503, "tokens": 2]]
        let answer = responder.respond(method: "POST", path: "/v1/chat/completions", body: body(request))
        #expect(answer.status == 503)
        let object = try #require(JSONObject.parse(answer.pieces.joined().map { $0 }))
        #expect(ProviderError.message(in: object)?.contains("503") == true)
        #expect(StubDirectives().overridden(by: ["stub": ["tokens": 2, "token_delay_ms": 7]]) == StubDirectives(tokens: 2, tokenDelayMs: 7))
    }

    @Test func badRequestsAndRoutesGetOpenAIShapedErrors() {
        #expect(responder.respond(method: "POST", path: "/v1/chat/completions", body: Array("nope".utf8)).status == 400)
        #expect(responder.respond(method: "GET", path: "/v1/chat/completions", body: []).status == 405)
        #expect(responder.respond(method: "POST", path: "/v1/embeddings", body: []).status == 404)
        #expect(responder.respond(method: "GET", path: "/healthz", body: []).status == 200)
    }
}
