import Foundation
import Testing
import LLMSpoolModel
@testable import LLMSpoolCore
@testable import LLMSpoolStub

@Suite struct StubMessagesTests {
    let responder = StubResponder(defaults: StubDirectives(tokens: 4))

    func body(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object))
    }

    func request(stream: Bool = false, stub: [String: Any]? = nil) -> [String: Any] {
        var object: [String: Any] = ["model": "messages-x", "max_tokens": 64, "stream": stream,
                                     "messages": [["role": "user", "content": "héllo"]]]
        if let stub { object["stub"] = stub }
        return object
    }

    func assemble(_ response: StubResponder.Response) -> (verdict: StreamVerdict, types: [String]) {
        var parser = SSEParser()
        var assembler = MessagesAssembler()
        var types: [String] = []
        let take: (SSEParser.Event) -> Void = { event in
            if case .data(let text) = event, let object = JSONObject.parse(Array(text.utf8)), let type = object["type"] as? String {
                types.append(type)
            }
            switch event {
            case .data(var text): text.withUTF8 { assembler.consume(.data(UnsafeRawBufferPointer($0))) }
            case .comment: assembler.consume(.comment)
            }
        }
        parser.feed(response.body, take)
        parser.finish(take)
        return (assembler.verdict(), types)
    }

    @Test func plainAndStreamedAnswersAreTheSameMessage() throws {
        let expected = StubAnswer.content(prompt: "héllo", tokens: 4)
        let plain = responder.respond(method: "POST", path: "/v1/messages", body: body(request()))
        #expect(plain.status == 200)
        let message = try #require(JSONObject.parse(plain.body))
        #expect(message["type"] as? String == "message")
        #expect(((message["content"] as? [[String: Any]])?.first?["text"] as? String) == expected)
        #expect(MessagesDialect().plainAnswerProblem(try RawJSON.parse(plain.body), in: plain.body) == nil)

        let stream = responder.respond(method: "POST", path: "/v1/messages", body: body(request(stream: true)))
        #expect(stream.headers.contains { $0 == ("Content-Type", "text/event-stream") })
        #expect(String(decoding: stream.body, as: UTF8.self).hasPrefix("event: message_start\ndata: "))
        let (verdict, types) = assemble(stream)
        #expect(types == ["message_start", "content_block_start", "ping"] + Array(repeating: "content_block_delta", count: 4)
            + ["content_block_stop", "message_delta", "message_stop"])
        guard case .complete(let assembled) = verdict else {
            Issue.record("expected complete, got \(verdict)")
            return
        }
        let streamed = try #require(JSONObject.parse(assembled.document))
        #expect(((streamed["content"] as? [[String: Any]])?.first?["text"] as? String) == expected)
        #expect(streamed["stop_reason"] as? String == "end_turn")
        #expect(assembled.usage?["output_tokens"] == 4)
    }

    @Test func headersAreCheckedWhenTheRequestAsks() {
        let asks = body(request(stub: ["api_key": "sk-ant-1", "anthropic_version": "2023-06-01"]))
        let good = ["x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01"]
        #expect(responder.respond(method: "POST", path: "/v1/messages", body: asks, headers: good).status == 200)
        var bearer = good
        bearer["authorization"] = "Bearer sk-ant-1"
        #expect(responder.respond(method: "POST", path: "/v1/messages", body: asks, headers: bearer).status == 401)
        #expect(responder.respond(method: "POST", path: "/v1/messages", body: asks, headers: ["x-api-key": "other", "anthropic-version": "2023-06-01"]).status == 401)
        #expect(responder.respond(method: "POST", path: "/v1/messages", body: asks, headers: ["x-api-key": "sk-ant-1"]).status == 400)
        // Not asked: not checked.
        #expect(responder.respond(method: "POST", path: "/v1/messages", body: body(request())).status == 200)
    }

    @Test func faultsTakeAnthropicsForms() throws {
        let overloaded = responder.respond(method: "POST", path: "/v1/messages", body: body(request(stub: ["faults": [["status": 529, "retry_after": 1]]])))
        #expect(overloaded.status == 529)
        let error = try #require(JSONObject.parse(overloaded.body))
        #expect(error["type"] as? String == "error")
        #expect((error["error"] as? [String: Any])?["type"] as? String == "overloaded_error")
        #expect(overloaded.headers.contains { $0 == ("retry-after", "1") })

        let inStream = responder.respond(method: "POST", path: "/v1/messages", body: body(request(stream: true, stub: ["faults": [["error_in_stream": true]]])))
        guard case .providerError(let message, let errorBody) = assemble(inStream).verdict else {
            Issue.record("expected a provider error")
            return
        }
        #expect(message == "Overloaded")
        #expect(String(decoding: inStream.body, as: UTF8.self).contains("event: error\ndata: "))
        #expect(MessagesDialect().streamFailure(message: message, body: errorBody, status: 200).embeddedCode == 529)

        let cut = responder.respond(method: "POST", path: "/v1/messages", body: body(request(stream: true, stub: ["faults": [["cut_after": 4]]])))
        #expect(cut.abortAtEnd)
        guard case .incomplete = assemble(cut).verdict else {
            Issue.record("a cut stream must be incomplete")
            return
        }
        let stalled = responder.respond(method: "POST", path: "/v1/messages", body: body(request(stream: true, stub: ["faults": [["stall_ms": 600, "keepalive_ms": 200]]])))
        let pings = assemble(stalled).types.filter { $0 == "ping" }.count
        #expect(pings == 4, "one ping after content_block_start, then three keep-alives")
        #expect(stalled.pieces.filter { $0.delayMs == 200 }.count == 3)
    }

    @Test func aRequestWithoutMaxTokensIsRefusedAsAnthropicDoes() throws {
        var object = request()
        object["max_tokens"] = nil
        let refused = responder.respond(method: "POST", path: "/v1/messages", body: body(object))
        #expect(refused.status == 400)
        #expect((JSONObject.parse(refused.body)?["error"] as? [String: Any])?["type"] as? String == "invalid_request_error")
    }
}
