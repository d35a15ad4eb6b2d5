import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct StreamAssemblerTests {
    func assemble(_ payloads: [String]) -> StreamVerdict {
        var assembler = StreamAssembler()
        for payload in payloads { assembler.consume(.data(payload)) }
        return assembler.verdict()
    }

    func object(_ verdict: StreamVerdict) throws -> [String: Any] {
        guard case .complete(let bytes) = verdict else {
            Issue.record("expected complete, got \(verdict)")
            return [:]
        }
        return try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func contentDeltasBecomeOneMessage() throws {
        let verdict = assemble([
            #"{"id":"c1","model":"m","created":5,"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            #"{"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
            #"{"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
            #"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            #"{"id":"c1","choices":[],"usage":{"total_tokens":3}}"#,
            "[DONE]",
        ])
        let result = try object(verdict)
        #expect(result["object"] as? String == "chat.completion")
        #expect(result["id"] as? String == "c1")
        #expect(result["model"] as? String == "m")
        #expect(result["created"] as? Int == 5)
        #expect((result["usage"] as? [String: Any])?["total_tokens"] as? Int == 3)
        let choice = try #require((result["choices"] as? [[String: Any]])?.first)
        #expect(choice["finish_reason"] as? String == "stop")
        let message = try #require(choice["message"] as? [String: Any])
        #expect(message["content"] as? String == "Hello")
        #expect(message["role"] as? String == "assistant")
    }

    @Test func toolCallsAreMergedByIndex() throws {
        let verdict = assemble([
            #"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"get","arguments":"{\"a\""}}]}}]}"#,
            #"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            #"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ])
        let result = try object(verdict)
        let message = try #require(((result["choices"] as? [[String: Any]])?.first)?["message"] as? [String: Any])
        #expect(message["content"] is NSNull)
        let call = try #require((message["tool_calls"] as? [[String: Any]])?.first)
        #expect(call["id"] as? String == "t1")
        let function = try #require(call["function"] as? [String: Any])
        #expect(function["name"] as? String == "get")
        #expect(function["arguments"] as? String == "{\"a\":1}")
    }

    @Test func severalChoicesStaySeparate() throws {
        let verdict = assemble([
            #"{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]}"#,
            #"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"length"}]}"#,
        ])
        let choices = try #require(try object(verdict)["choices"] as? [[String: Any]])
        #expect(choices.count == 2)
        #expect((choices[0]["message"] as? [String: Any])?["content"] as? String == "a")
        #expect(choices[1]["finish_reason"] as? String == "length")
    }

    @Test func finishReasonWithoutDoneIsComplete() throws {
        let verdict = assemble([#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#])
        #expect(try object(verdict).isEmpty == false)
    }

    @Test func aStreamThatStopsEarlyIsIncomplete() {
        let verdict = assemble([#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#])
        guard case .incomplete = verdict else {
            Issue.record("expected incomplete, got \(verdict)")
            return
        }
    }

    @Test func anEmptyStreamIsIncomplete() {
        guard case .incomplete = assemble([]) else {
            Issue.record("expected incomplete")
            return
        }
    }

    @Test func anErrorInsideTheStreamIsAProviderError() {
        let verdict = assemble([
            #"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#,
            #"{"error":{"message":"overloaded","code":503}}"#,
            "[DONE]",
        ])
        guard case .providerError(let message, let body) = verdict else {
            Issue.record("expected provider error, got \(verdict)")
            return
        }
        #expect(message == "overloaded")
        #expect(String(decoding: body, as: UTF8.self).contains("overloaded"))
    }

    @Test func aNonJSONEventIsMalformed() {
        guard case .malformed(let reason) = assemble(["{not json"]) else {
            Issue.record("expected malformed")
            return
        }
        #expect(reason.contains("event 1"))
    }
}
