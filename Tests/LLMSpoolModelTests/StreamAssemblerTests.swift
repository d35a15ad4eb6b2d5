import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct StreamAssemblerTests {
    func assemble(_ payloads: [String]) -> StreamVerdict {
        var assembler = StreamAssembler()
        for payload in payloads { assembler.consume(.data(payload)) }
        return assembler.verdict()
    }

    func object(_ verdict: StreamVerdict) throws -> [String: Any] {
        guard case .complete(let completion) = verdict else {
            Issue.record("expected complete, got \(verdict)")
            return [:]
        }
        return try #require(JSONSerialization.jsonObject(with: Data(completion.document)) as? [String: Any])
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

    /// `choices` of another kind than a list (or null) fails the stream, naming the event:
    /// before, the event was skipped and its text lost, the answer published without it.
    @Test func choicesThatAreNoListFailTheStream() throws {
        for choices in [#"{"index":0,"delta":{"content":"lost"}}"#, #""text""#, "3"] {
            let verdict = assemble([
                #"{"choices":[{"index":0,"delta":{"content":"kept "}}]}"#,
                #"{"choices":\#(choices)}"#,
                #"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ])
            guard case .malformed(let message) = verdict else {
                Issue.record("\(choices): expected malformed, got \(verdict)")
                continue
            }
            #expect(message.contains("event 2") && message.contains("\"choices\" is not a list"), "\(message)")
        }
        let completions = StreamSplitting.assemble(CompletionsAssembler(), CompletionsDialectTests.stream([
            #"{"choices":{"text":"lost"}}"#, #"{"choices":[{"index":0,"text":"x","finish_reason":"stop"}]}"#, "[DONE]"]), cuts: [], spill: false)
        #expect(completions.verdict == "malformed", "completions: \(completions.verdict)")
        #expect(try object(assemble([#"{"choices":null}"#, #"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#])).isEmpty == false,
                "null choices are none")
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

    /// An index that is not a whole number from 0 used to be folded into entry 0: another
    /// choice's text appended to the first, or two tool calls published as one
    /// (`delete_filesend_email`), as a success.
    @Test(arguments: ["1e3", "1.5", "-1", "true", "\"1\"", "9223372036854775808", "[0]"])
    func anIndexThatIsNotAWholeNumberMakesTheStreamMalformed(index: String) {
        let first = #"{"choices":[{"index":0,"delta":{"role":"assistant","content":"zero"}}]}"#
        let choice = #"{"choices":[{"index":\#(index),"delta":{"content":" OTHER"},"finish_reason":"stop"}]}"#
        guard case .malformed(let reason) = assemble([first, choice, "[DONE]"]) else {
            Issue.record("a choice's index \(index) was taken")
            return
        }
        #expect(reason.contains("event 2") && reason.contains("index"), "\(reason)")
        let call = #"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":\#(index),"id":"call_B","function":{"name":"send_email","arguments":"{}"}}]}}]}"#
        guard case .malformed = assemble([first, call, #"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#]) else {
            Issue.record("a tool call's index \(index) was taken")
            return
        }
    }

    /// Some servers leave a tool call's index out: a call with an id of its own begins the
    /// next one, and the pieces without an id go on the last one.
    @Test func toolCallsWithoutAnIndexAreToldApartByTheirIDs() throws {
        let verdict = assemble([
            #"{"choices":[{"delta":{"role":"assistant","tool_calls":[{"id":"call_A","type":"function","function":{"name":"delete_file","arguments":"{\"path\""}}]}}]}"#,
            #"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":\"/tmp/x\"}"}}]}}]}"#,
            #"{"choices":[{"delta":{"tool_calls":[{"id":"call_B","type":"function","function":{"name":"send_email","arguments":"{}"}}]}}]}"#,
            #"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ])
        let message = try #require(((try object(verdict)["choices"] as? [[String: Any]])?.first)?["message"] as? [String: Any])
        let calls = try #require(message["tool_calls"] as? [[String: Any]])
        #expect(calls.map { $0["id"] as? String } == ["call_A", "call_B"])
        #expect(calls.map { ($0["function"] as? [String: Any])?["name"] as? String } == ["delete_file", "send_email"])
        #expect(calls.map { ($0["function"] as? [String: Any])?["arguments"] as? String } == ["{\"path\":\"/tmp/x\"}", "{}"])
    }

    @Test func aNonJSONEventIsMalformed() {
        guard case .malformed(let reason) = assemble(["{not json"]) else {
            Issue.record("expected malformed")
            return
        }
        #expect(reason.contains("event 1"))
    }
}

@Suite struct StreamAssemblerTextTests {
    static let events = [
        #"{"id":"c9","model":"m","created":7,"system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        #"{"choices":[{"index":0,"delta":{"content":"say \"hi\"\n"}},{"index":1,"delta":{"content":"other"}}]}"#,
        #"{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00 caf\u00e9 / ok"}}]}"#,
        #"{"choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"length"}]}"#,
        #"{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":5,"total_tokens":7}}"#,
        "[DONE]",
    ]

    func feed(_ assembler: inout StreamAssembler, _ payload: String) {
        assembler.consume(.data(payload))
    }

    @Test func escapedTextIsCopiedAndReadsBackAsTheSameText() throws {
        var assembler = StreamAssembler()
        for event in Self.events { feed(&assembler, event) }
        guard case .complete(let completion) = assembler.verdict() else {
            Issue.record("expected complete")
            return
        }
        #expect(completion.head == StreamAssembler.contentHead)
        #expect(completion.usage == ["prompt_tokens": 2, "completion_tokens": 5, "total_tokens": 7])
        let object = try #require(JSONObject.parse(completion.document))
        let choices = try #require(object["choices"] as? [[String: Any]])
        #expect(choices.count == 2)
        let first = try #require(choices[0]["message"] as? [String: Any])
        #expect(first["content"] as? String == "say \"hi\"\n\u{1F600} café / ok")
        #expect(first["refusal"] as? String == "no")
        #expect(choices[0]["finish_reason"] as? String == "stop")
        #expect((choices[1]["message"] as? [String: Any])?["content"] as? String == "other")
        #expect(choices[1]["index"] as? Int == 1)
        #expect(object["system_fingerprint"] as? String == "fp")
        #expect(object["created"] as? Int == 7)
    }

    /// Taking the text off in pieces at any point gives the same document as holding it.
    @Test func textTakenInPiecesGivesTheSameDocument() throws {
        var whole = StreamAssembler()
        for event in Self.events { feed(&whole, event) }
        guard case .complete(let held) = whole.verdict() else {
            Issue.record("expected complete")
            return
        }
        for cut in 1...Self.events.count {
            var assembler = StreamAssembler()
            var written: [UInt8] = []
            for (index, event) in Self.events.enumerated() {
                feed(&assembler, event)
                if index + 1 >= cut, assembler.heldContentCount > 0 {
                    if assembler.contentTaken == 0 { written += StreamAssembler.contentHead }
                    written += assembler.takeContent()
                }
            }
            #expect(assembler.heldContentCount == 0)
            guard case .complete(let rest) = assembler.verdict() else {
                Issue.record("expected complete")
                return
            }
            #expect(written + rest.document == held.document, "taking from event \(cut)")
        }
    }

    @Test func anAnswerWithoutTextHasNoHead() throws {
        var assembler = StreamAssembler()
        feed(&assembler, #"{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":"stop"}]}"#)
        guard case .complete(let completion) = assembler.verdict() else {
            Issue.record("expected complete")
            return
        }
        #expect(completion.head.isEmpty && completion.content.isEmpty)
        let message = try #require(((JSONObject.parse(completion.tail)?["choices"] as? [[String: Any]])?.first)?["message"] as? [String: Any])
        #expect(message["content"] is NSNull)
    }

    @Test func aSurrogateSplitAcrossEventsIsMalformedAsFoundationWouldSay() {
        var assembler = StreamAssembler()
        feed(&assembler, #"{"choices":[{"index":0,"delta":{"content":"\ud83d"}}]}"#)
        guard case .malformed(let reason) = assembler.verdict() else {
            Issue.record("expected malformed")
            return
        }
        #expect(reason.contains("surrogate"))
    }
}
