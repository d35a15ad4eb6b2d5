import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct CompletionsDialectTests: DialectTesting {
    static let url = "/v1/completions"

    static func stream(_ chunks: [String]) -> [UInt8] {
        Array(chunks.map { "data: \($0)\n\n" }.joined().utf8)
    }

    static let chunks = [
        #"{"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[{"index":0,"text":"Hel","logprobs":null,"finish_reason":null}]}"#,
        #"{"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[{"index":1,"text":"b\u00e9","logprobs":null,"finish_reason":null}]}"#,
        #"{"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[{"index":0,"text":"lo","logprobs":null,"finish_reason":"stop"}]}"#,
        #"{"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[{"index":1,"text":"","logprobs":null,"finish_reason":"length"}]}"#,
        #"{"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}"#,
        "[DONE]",
    ]

    @Test func pathHeadersAndUsageMember() throws {
        #expect(dialect.id == "completions" && dialect.path == "/completions" && dialect.api == .openai)
        #expect(dialect.headers(apiKey: "k") == ["Authorization: Bearer k"])
        let text = Array(#"{"url":"/v1/completions","body":  {"model":"m","prompt":"p","stream":true}}"#.utf8)
        let summary = try RequestValidator.validate(text).get()
        let brace = try #require(summary.usageSplice)
        #expect(text[brace] == UInt8(ascii: "{"))
        let spliced = Array(text[summary.body.lowerBound...brace]) + dialect.usageMember + Array(text[(brace + 1)..<summary.body.upperBound])
        guard case .bool(true, _)? = try RawJSON.parse(spliced)["stream_options"]?["include_usage"] else {
            Issue.record("the spliced body does not ask for usage")
            return
        }
        let asked = try RequestValidator.validate(envelope(#"{"model":"m","prompt":"p","stream":true,"stream_options":{}}"#)).get()
        #expect(asked.usageSplice == nil)
    }

    @Test func validationAndEstimate() throws {
        let summary = try RequestValidator.validate(envelope(#"{"model":"m","prompt":["12345678","1234"],"max_tokens":7}"#)).get()
        #expect(summary.dialect == "completions" && !summary.stream)
        #expect(summary.estimatedTokens == 12 / 4 + 1 + 7)
        #expect(problem(#"{"prompt":"x"}"#)?.message == #"the request has no "model""#)
        #expect(problem(#"{"model":"m"}"#)?.message == #"the request has no "prompt""#)
        let wrong = try #require(problem(#"{"model":"m","prompt":{"a":1}}"#))
        #expect(wrong.message == #""prompt" must be a string or an array, not an object"# && wrong.column == 55)
        #expect(problem(#"{"model":"m","prompt":"x","max_tokens":[]}"#)?.message == #""max_tokens" must be a number, not an array"#)
    }

    @Test func chunksBecomeATextCompletionAtEverySplit() throws {
        let (whole, differing) = StreamSplitting.sameAtEverySplit({ CompletionsAssembler() }, Self.stream(Self.chunks))
        #expect(differing.isEmpty, "\(differing.prefix(5))")
        let document = try #require(whole.document)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
        #expect(object["object"] as? String == "text_completion")
        #expect(object["id"] as? String == "cmpl-1" && object["model"] as? String == "m" && object["created"] as? Int == 5)
        let choices = try #require(object["choices"] as? [[String: Any]])
        #expect(choices.map { $0["text"] as? String } == ["Hello", "bé"])
        #expect(choices.map { $0["finish_reason"] as? String } == ["stop", "length"])
        #expect(choices.map { $0["index"] as? Int } == [0, 1])
        #expect((object["usage"] as? [String: Any])?["total_tokens"] as? Int == 5)
    }

    @Test func verdictsOfStreamsThatGoWrong() throws {
        let error = Self.stream([Self.chunks[0], #"{"error":{"message":"busy","code":503}}"#])
        #expect(StreamSplitting.sameAtEverySplit({ CompletionsAssembler() }, error).whole.verdict == "provider-error: busy")
        #expect(StreamSplitting.assemble(CompletionsAssembler(), Self.stream([Self.chunks[0]]), cuts: [], spill: false).verdict == "incomplete")
        #expect(StreamSplitting.assemble(CompletionsAssembler(), Self.stream(["[DONE]"]), cuts: [], spill: false).verdict == "malformed")
        #expect(StreamSplitting.assemble(CompletionsAssembler(), Self.stream(["{oops"]), cuts: [], spill: false).verdict == "malformed")
        #expect(StreamSplitting.assemble(CompletionsAssembler(), Self.stream(["3"]), cuts: [], spill: false).verdict == "malformed")
        let folded = Self.stream([#"{"choices":[{"index":0,"text":"zero"}]}"#, #"{"choices":[{"index":1e3,"text":" OTHER","finish_reason":"stop"}]}"#])
        #expect(StreamSplitting.assemble(CompletionsAssembler(), folded, cuts: [], spill: false).verdict == "malformed", "an index of 1e3 was taken for 0")
        // A finish_reason on every choice ends the answer even without [DONE].
        let finished = Self.stream([#"{"choices":[{"index":0,"text":"a","finish_reason":"stop"}]}"#])
        #expect(StreamSplitting.assemble(CompletionsAssembler(), finished, cuts: [], spill: false).verdict == "complete")
        let failure = dialect.streamFailure(message: "busy", body: Array(#"{"error":{"message":"busy","code":503}}"#.utf8), status: 200)
        #expect(failure.kind == .providerError && failure.embeddedCode == 503)
    }

    @Test func aChoiceWithoutTextStillHasAString() throws {
        let stream = Self.stream([#"{"choices":[{"index":1,"text":"x","finish_reason":"stop"},{"index":0,"finish_reason":"stop"}]}"#, "[DONE]"])
        let document = try #require(StreamSplitting.assemble(CompletionsAssembler(), stream, cuts: [], spill: true).document)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
        #expect((object["choices"] as? [[String: Any]])?.map { $0["text"] as? String } == ["", "x"])
    }

    @Test func plainAnswerMustBeATextCompletion() throws {
        let good = Array(#"{"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"total_tokens":1}}"#.utf8)
        guard case .success(nil, let usage) = AttemptJudge.judgePlain(status: 200, body: good, dialect: dialect) else {
            Issue.record("a completion was refused")
            return
        }
        #expect(usage?["prompt_tokens"] == 1)
        let chat = Array(#"{"object":"chat.completion","choices":[]}"#.utf8)
        guard case .failure(let failure) = AttemptJudge.judgePlain(status: 200, body: chat, dialect: dialect) else {
            Issue.record("a chat completion passed")
            return
        }
        #expect(failure.kind == .malformedResponse)
    }

    @Test func textOfEventsAndResults() throws {
        #expect(dialect.textDelta(ofEvent: Array(Self.chunks[0].utf8)) == "Hel")
        #expect(dialect.textDelta(ofEvent: Array("[DONE]".utf8)) == nil)
        #expect(dialect.answerText(ofResult: Array(#"{"choices":[{"index":0,"text":"a\nb"}]}"#.utf8)) == "a\nb")
        #expect(dialect.answerText(ofResult: Array(#"{"choices":[]}"#.utf8)) == nil)
    }
}
