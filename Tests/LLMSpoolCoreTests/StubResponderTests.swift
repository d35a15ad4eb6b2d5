import Foundation
import Testing
@testable import LLMSpoolCore
@testable import LLMSpoolStub

@Suite struct StubResponderTests {
    let responder = StubResponder(defaults: StubDirectives(tokens: 5))

    func body(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object))
    }

    @Test func aStreamAssemblesToThePlainAnswer() throws {
        let request: [String: Any] = ["model": "m", "messages": [["role": "user", "content": "héllo"]]]
        let plain = responder.respond(method: "POST", path: "/v1/chat/completions", body: body(request))
        #expect(plain.status == 200)
        let plainObject = try #require(JSONObject.parse(plain.body))
        let expected = StubAnswer.content(prompt: "héllo", tokens: 5)
        #expect(expected == "Echo: héllo tök1 tök2 tök3 tök4")
        let plainMessage = ((plainObject["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
        #expect(plainMessage == expected)

        var streamed = request
        streamed["stream"] = true
        let stream = responder.respond(method: "POST", path: "/v1/chat/completions", body: body(streamed))
        #expect(stream.headers.contains { $0 == ("Content-Type", "text/event-stream") })
        var parser = SSEParser()
        var assembler = StreamAssembler()
        parser.feed(stream.body) { assembler.consume($0) }
        parser.finish { assembler.consume($0) }
        #expect(assembler.sawDone)
        guard case .complete(let completion) = assembler.verdict() else {
            Issue.record("the stub's stream must be complete")
            return
        }
        let assembled = try #require(JSONObject.parse(completion.document))
        let content = ((assembled["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
        #expect(content == expected)
        #expect((assembled["id"] as? String)?.hasPrefix("chatcmpl-stub-") == true)
    }

    @Test func directivesInjectStatusAndLength() throws {
        let request: [String: Any] = ["model": "m", "messages": [], "stub": ["status": 503, "tokens": 2]]
        let answer = responder.respond(method: "POST", path: "/v1/chat/completions", body: body(request))
        #expect(answer.status == 503)
        let object = try #require(JSONObject.parse(answer.body))
        #expect(ProviderError.message(in: object)?.contains("503") == true)
        #expect(StubDirectives().overridden(by: ["stub": ["tokens": 2, "token_delay_ms": 7]]) == StubDirectives(tokens: 2, tokenDelayMs: 7))
    }

    @Test func badRequestsAndRoutesGetOpenAIShapedErrors() {
        #expect(responder.respond(method: "POST", path: "/v1/chat/completions", body: Array("nope".utf8)).status == 400)
        #expect(responder.respond(method: "GET", path: "/v1/chat/completions", body: []).status == 405)
        #expect(responder.respond(method: "POST", path: "/v1/images/generations", body: []).status == 404)
        #expect(responder.respond(method: "GET", path: "/healthz", body: []).status == 200)
    }
}

@Suite struct StubFaultTests {
    let responder = StubResponder(defaults: StubDirectives(tokens: 4))

    func request(stream: Bool, faults: [[String: Any]]) -> [UInt8] {
        let object: [String: Any] = ["model": "m", "stream": stream, "messages": [["role": "user", "content": "x"]], "stub": ["faults": faults]]
        return Array(try! JSONSerialization.data(withJSONObject: object))
    }

    func verdict(_ response: StubResponder.Response) -> StreamVerdict {
        var parser = SSEParser()
        var assembler = StreamAssembler()
        parser.feed(response.body) { assembler.consume($0) }
        parser.finish { assembler.consume($0) }
        return assembler.verdict()
    }

    @Test func faultsApplyToTheirAttemptOnly() {
        let body = request(stream: false, faults: [["status": 429, "retry_after": 3], ["status": 503, "retry_after_ms": "1500", "x_should_retry": "true"]])
        let first = responder.respond(method: "POST", path: "/v1/chat/completions", body: body, attempt: 1)
        #expect(first.status == 429)
        #expect(first.headers.contains { $0 == ("Retry-After", "3") })
        let second = responder.respond(method: "POST", path: "/v1/chat/completions", body: body, attempt: 2)
        #expect(second.status == 503)
        #expect(second.headers.contains { $0 == ("retry-after-ms", "1500") })
        #expect(second.headers.contains { $0 == ("x-should-retry", "true") })
        #expect(responder.respond(method: "POST", path: "/v1/chat/completions", body: body, attempt: 3).status == 200)
    }

    @Test func streamFaultsBreakTheStreamAsAsked() {
        let cut = responder.respond(method: "POST", path: "/v1/chat/completions", body: request(stream: true, faults: [["cut_after": 2]]))
        #expect(cut.abortAtEnd)
        #expect(cut.pieces.count == 2)
        let truncated = responder.respond(method: "POST", path: "/v1/chat/completions", body: request(stream: true, faults: [["truncate_after": 3]]))
        #expect(!truncated.abortAtEnd)
        guard case .incomplete = verdict(truncated) else {
            Issue.record("a truncated stream must be incomplete")
            return
        }
        let erroring = responder.respond(method: "POST", path: "/v1/chat/completions", body: request(stream: true, faults: [["error_in_stream": true]]))
        guard case .providerError(let message, _) = verdict(erroring) else {
            Issue.record("an error event must be a provider error")
            return
        }
        #expect(message.contains("inside the stream"))
        let stalled = responder.respond(method: "POST", path: "/v1/chat/completions", body: request(stream: true, faults: [["stall_ms": 1000, "keepalive_ms": 250]]))
        let comments = stalled.pieces.filter { $0.bytes.first == UInt8(ascii: ":") }
        #expect(comments.count == 4)
        #expect(comments.allSatisfy { $0.delayMs == 250 })
        guard case .complete = verdict(stalled) else {
            Issue.record("a stall ends in a whole answer when nobody gives up")
            return
        }
    }
}
