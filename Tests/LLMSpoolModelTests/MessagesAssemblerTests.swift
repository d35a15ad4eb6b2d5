import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct MessagesAssemblerTests {
    static let start = #"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"messages-model","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":7,"output_tokens":1}}}"#
    static let delta = #"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#
    static let stop = #"{"type":"message_stop"}"#

    static func text(_ index: Int, _ pieces: [String]) -> [String] {
        [#"{"type":"content_block_start","index":\#(index),"content_block":{"type":"text","text":""}}"#]
            + pieces.map { #"{"type":"content_block_delta","index":\#(index),"delta":{"type":"text_delta","text":"\#($0)"}}"# }
            + [#"{"type":"content_block_stop","index":\#(index)}"#]
    }

    /// The events as the API sends them, each with its `event:` line.
    static func sse(_ payloads: [String]) -> [UInt8] {
        var text = ""
        for payload in payloads {
            let type = (try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])?["type"] as? String ?? "x"
            text += "event: \(type)\ndata: \(payload)\n\n"
        }
        return Array(text.utf8)
    }

    func assemble(_ payloads: [String]) -> StreamVerdict {
        var assembler = MessagesAssembler()
        for payload in payloads {
            var copy = payload
            copy.withUTF8 { assembler.consume(.data(UnsafeRawBufferPointer($0))) }
        }
        return assembler.verdict()
    }

    func document(_ verdict: StreamVerdict) throws -> [UInt8] {
        guard case .complete(let message) = verdict else {
            Issue.record("expected complete, got \(verdict)")
            return []
        }
        return message.document
    }

    func object(_ verdict: StreamVerdict) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(try document(verdict))) as? [String: Any])
    }

    @Test func textDeltasBecomeOneMessage() throws {
        let verdict = assemble([Self.start, #"{"type":"ping"}"#] + Self.text(0, ["Hel", "lo \\\"you\\\""]) + [#"{"type": "ping"}"#, Self.delta, Self.stop])
        let message = try object(verdict)
        #expect(message["type"] as? String == "message")
        #expect(message["id"] as? String == "msg_1")
        #expect(message["model"] as? String == "messages-model")
        #expect(message["role"] as? String == "assistant")
        #expect(message["stop_reason"] as? String == "end_turn")
        #expect(message["stop_sequence"] is NSNull)
        let content = try #require(message["content"] as? [[String: Any]])
        #expect(content.count == 1)
        #expect(content[0]["type"] as? String == "text")
        #expect(content[0]["text"] as? String == "Hello \"you\"")
        let usage = try #require(message["usage"] as? [String: Any])
        // message_delta's count replaces message_start's; the others stay.
        #expect(usage["output_tokens"] as? Int == 15)
        #expect(usage["input_tokens"] as? Int == 25)
        #expect(usage["cache_read_input_tokens"] as? Int == 7)
        guard case .complete(let assembled) = verdict else { return }
        #expect(assembled.usage == ["input_tokens": 25, "output_tokens": 15, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 7])
    }

    @Test func toolInputIsJoinedAndParsed() throws {
        let verdict = assemble([
            Self.start,
            #"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ris\", \"days\": 2}"}}"#,
            #"{"type":"content_block_stop","index":0}"#,
            #"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}"#,
            Self.stop,
        ])
        let message = try object(verdict)
        #expect(message["stop_reason"] as? String == "tool_use")
        let block = try #require((message["content"] as? [[String: Any]])?.first)
        #expect(block["type"] as? String == "tool_use")
        #expect(block["id"] as? String == "toolu_1")
        #expect(block["name"] as? String == "get_weather")
        let input = try #require(block["input"] as? [String: Any])
        #expect(input["city"] as? String == "Paris")
        #expect(input["days"] as? Int == 2)
    }

    @Test func toolWithoutDeltasKeepsItsInput() throws {
        let message = try object(assemble([
            Self.start,
            #"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}"#,
            #"{"type":"content_block_stop","index":0}"#, Self.delta, Self.stop,
        ]))
        let block = try #require((message["content"] as? [[String: Any]])?.first)
        #expect((block["input"] as? [String: Any])?.isEmpty == true)
    }

    @Test func thinkingAndSignatureThenText() throws {
        let message = try object(assemble([
            Self.start,
            #"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
            #"{"type":"content_block_stop","index":0}"#,
        ] + Self.text(1, ["Answer"]) + [Self.delta, Self.stop]))
        let content = try #require(message["content"] as? [[String: Any]])
        #expect(content.count == 2)
        #expect(content[0]["type"] as? String == "thinking")
        #expect(content[0]["thinking"] as? String == "Let me think.")
        #expect(content[0]["signature"] as? String == "EqQB")
        #expect(content[1]["text"] as? String == "Answer")
    }

    @Test func citationsAreCollected() throws {
        let message = try object(assemble([Self.start] + Self.text(0, ["a"]).dropLast() + [
            #"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x","document_index":0,"document_title":null,"start_char_index":0,"end_char_index":1}}}"#,
            #"{"type":"content_block_stop","index":0}"#, Self.delta, Self.stop,
        ]))
        let block = try #require((message["content"] as? [[String: Any]])?.first)
        #expect((block["citations"] as? [[String: Any]])?.first?["cited_text"] as? String == "x")
    }

    @Test func errorEventIsAProviderError() throws {
        let verdict = assemble([Self.start] + Self.text(0, ["par"]).dropLast() + [#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#])
        guard case .providerError(let message, let body) = verdict else {
            Issue.record("expected a provider error, got \(verdict)")
            return
        }
        #expect(message == "Overloaded")
        #expect(MessagesDialect().streamFailure(message: message, body: body, status: 200).embeddedCode == 529)
    }

    @Test func streamWithoutMessageStopIsIncomplete() throws {
        for cut in [0, 1, 3, 5, 6] {
            let events = Array(([Self.start] + Self.text(0, ["a", "b"]) + [Self.delta, Self.stop]).prefix(cut))
            guard case .incomplete(let reason) = assemble(events) else {
                Issue.record("\(cut) events: expected incomplete, got \(assemble(events))")
                continue
            }
            #expect(reason.contains("message_stop"))
        }
    }

    @Test(arguments: [
        ([#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#], "before message_start"),
        ([start, start], "second message_start"),
        ([start, #"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#], "has not started"),
        ([start] + text(0, ["x"]) + [#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"y"}}"#], "has stopped"),
        ([start] + text(1, ["x"]) + text(0, ["y"]), "started after block 1"),
        ([start, #"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}"#,
          #"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
          #"{"type":"content_block_stop","index":0}"#], "not JSON"),
        ([start, #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
          #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#], "no string \"text\""),
        ([start, #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
          #"{"type":"content_block_delta","index":0,"delta":{"type":"sparkle_delta","x":1}}"#], "unknown type"),
        ([start, #"{"type":"content_block_start","index":"0","content_block":{"type":"text"}}"#], "integer \"index\""),
        ([#"{"type":"message_start","message":{"type":"completion"}}"#], "of type message"),
        ([start, "not json"], "not JSON"),
        ([start, "[1]"], "not a JSON object"),
        ([start, #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#, delta, stop], "had not stopped"),
        ([start, #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
          #"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#], "which is a text block"),
        ([start, #"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
          #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#], "which is not a text block"),
    ] as [([String], String)])
    func malformedStreamsAreNamed(events: [String], reason: String) throws {
        guard case .malformed(let message) = assemble(events + [Self.stop]) else {
            Issue.record("expected malformed, got \(assemble(events + [Self.stop]))")
            return
        }
        #expect(message.contains(reason), "\(message)")
    }

    @Test func eventsAfterMessageStopAreIgnored() throws {
        let whole = [Self.start] + Self.text(0, ["a"]) + [Self.delta, Self.stop]
        #expect(try document(assemble(whole + ["garbage", #"{"type":"error","error":{"type":"api_error","message":"late"}}"#])) == document(assemble(whole)))
    }

    static let rich = [start, #"{"type":"ping"}"#,
                       #"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
                       #"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm \u00e9"}}"#,
                       #"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
                       #"{"type":"content_block_stop","index":0}"#]
        + text(1, ["Sal", "ut ", "é🙂 \\n"])
        + [#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#,
           #"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"[1,"}}"#,
           #"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"2]"}}"#,
           #"{"type":"content_block_stop","index":2}"#]
        + text(3, ["tail"]) + [delta, stop]

    @Test func streamSplitAtEveryByteGivesTheSameResult() throws {
        let bytes = Self.sse(Self.rich)
        let whole = try document(assemble(Self.rich))
        #expect(!whole.isEmpty)
        for split in 0...bytes.count {
            var parser = SSEParser()
            var assembler = MessagesAssembler()
            bytes[..<split].withUnsafeBytes { parser.feedRaw($0) { assembler.consume($0) } }
            bytes[split...].withUnsafeBytes { parser.feedRaw($0) { assembler.consume($0) } }
            parser.finishRaw { assembler.consume($0) }
            #expect(try document(assembler.verdict()) == whole, "split at \(split)")
        }
        let message = try #require(JSONSerialization.jsonObject(with: Data(whole)) as? [String: Any])
        let content = try #require(message["content"] as? [[String: Any]])
        #expect(content.map { $0["type"] as? String } == ["thinking", "text", "tool_use", "text"])
        #expect(content[1]["text"] as? String == "Salut é🙂 \n")
        #expect(content[2]["input"] as? [Int] == [1, 2])
    }

    /// Takes the text off after every event, as the engine does past its threshold, and
    /// puts the file together as the finisher does.
    func spilledDocument(_ payloads: [String]) throws -> [UInt8] {
        var assembler = MessagesAssembler()
        var file: [UInt8] = []
        var taking = false
        for payload in payloads {
            var copy = payload
            copy.withUTF8 { assembler.consume(.data(UnsafeRawBufferPointer($0))) }
            if assembler.heldContentCount > 0 {
                if !taking { file += assembler.contentHead }
                taking = true
                file += assembler.takeContent()
                #expect(assembler.heldContentCount == 0)
            }
        }
        guard case .complete(let message) = assembler.verdict() else {
            Issue.record("expected complete, got \(assembler.verdict())")
            return []
        }
        #expect(taking)
        #expect(message.head.isEmpty)
        return file + message.head + message.content + message.tail
    }

    @Test func takenTextMakesTheSameDocument() throws {
        #expect(try spilledDocument(Self.rich) == document(assemble(Self.rich)))
        let plain = [Self.start] + Self.text(0, ["one ", "two"]) + [Self.delta, Self.stop]
        #expect(try spilledDocument(plain) == document(assemble(plain)))
    }

    @Test func onlyTheStreamingTextBlockIsTaken() throws {
        var assembler = MessagesAssembler()
        for payload in [Self.start] + Self.rich[2...4] {
            var copy = payload
            copy.withUTF8 { assembler.consume(.data(UnsafeRawBufferPointer($0))) }
        }
        // A thinking block is streaming: nothing can be taken yet.
        #expect(assembler.heldContentCount == 0)
        #expect(assembler.takeContent().isEmpty)
    }
}

@Suite struct MessagesKeepAliveTests {
    func isContent(_ payload: String) -> Bool {
        var copy = payload
        return copy.withUTF8 { MessagesAssembler().isContent(UnsafeRawBufferPointer($0)) }
    }

    @Test func pingIsNoContentForTheIdleTimer() {
        #expect(!isContent(#"{"type":"ping"}"#))
        #expect(!isContent(#"{"type": "ping"}"#))
        #expect(isContent(#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ping"}}"#))
        #expect(isContent(#"{"type":"message_stop"}"#))
        #expect(isContent("not json"))
        // Chat has no keep-alive in its data.
        var chat = #"{"type":"ping"}"#
        #expect(chat.withUTF8 { StreamAssembler().isContent(UnsafeRawBufferPointer($0)) })
    }
}
