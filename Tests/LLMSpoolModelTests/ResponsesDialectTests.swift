import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct ResponsesDialectTests: DialectTesting {
    static let url = "/v1/responses"

    static let response = #"{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi th\u00e9re","annotations":[]}]}],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":8}}"#

    /// A stream as the API sends it: typed events, each with its `event:` line.
    static func stream(ending: String) -> [UInt8] {
        let events = [
            #"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}"#,
            #"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}"#,
            #"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","status":"in_progress","content":[]}}"#,
            #"{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi th\u00e9","logprobs":[]}"#,
            #"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"re","logprobs":[]}"#,
            ending,
        ]
        return Array(events.map { event in
            let type = (try? JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any])?["type"] as? String ?? "x"
            return "event: \(type)\ndata: \(event)\n\n"
        }.joined().utf8)
    }

    @Test func registeredUnderItsURLAfterChat() throws {
        #expect(DialectRegistry.all.map(\.id).prefix(4) == ["chat.completions", "responses", "completions", "embeddings"])
        #expect(dialect.id == "responses" && dialect.path == "/responses" && dialect.api == .openai)
        #expect(dialect.headers(apiKey: "k") == ["Authorization: Bearer k"])
        #expect(dialect.usageMember.isEmpty)
    }

    @Test func validRequestsAndTheirEstimate() throws {
        let summary = try RequestValidator.validate(envelope(#"{"model":"m","input":"12345678","max_output_tokens":100,"stream":true}"#)).get()
        #expect(summary.dialect == "responses" && summary.model == "m" && summary.stream)
        #expect(summary.usageSplice == nil, "the terminal event carries usage: nothing is spliced")
        #expect(summary.estimatedTokens == 8 / 4 + 1 + 100)
        let items = try RequestValidator.validate(envelope(#"{"model":"m","instructions":"abcd","input":[{"role":"user","content":[{"type":"input_text","text":"12345678"}]}]}"#)).get()
        #expect(items.estimatedTokens == 12 / 4 + 1 && !items.stream)
        let huge = try RequestValidator.validate(envelope(#"{"model":"m","input":"x","max_output_tokens":99999999999999999999999}"#)).get()
        #expect(huge.estimatedTokens == 0 + 1 + (1 << 40))
    }

    @Test func firstProblemNamedWithItsPosition() throws {
        #expect(problem(#"{"input":"x"}"#)?.message == #"the request has no "model""#)
        #expect(problem(#"{"input":"x"}"#)?.kind == .missingField)
        #expect(problem(#"{"model":"m"}"#)?.message == #"the request has no "input""#)
        #expect(problem(#"{"model":"m"}"#)?.column == 31, "a missing member is placed at the body")
        let wrong = try #require(problem(#"{"model":"m","input":7}"#))
        #expect(wrong.kind == .wrongType && wrong.message == #""input" must be a string or an array of items, not a number"#)
        #expect(wrong.line == 1 && wrong.column == 52)
        #expect(problem(#"{"model":"","input":"x"}"#)?.message == #""model" must be a non-empty string, not a string"#)
        #expect(problem(#"{"model":"m","input":"x","stream":"yes"}"#)?.message == #""stream" must be true or false, not a string"#)
        #expect(problem(#"{"model":"m","input":"x","max_output_tokens":"9"}"#)?.message == #""max_output_tokens" must be a number, not a string"#)
        #expect(problem(#"{"model":"m","input":"x","max_output_tokens":1.5}"#)?.kind == .wrongType)
        let lines = Array("{\"url\":\"/v1/responses\",\n \"body\":{\"model\":\"m\",\n  \"input\":{}}}".utf8)
        guard case .failure(let placed) = RequestValidator.validate(lines) else { Issue.record("an object input passed"); return }
        #expect(placed.line == 3 && placed.column == 11)
    }

    @Test func completedStreamGivesTheTerminalResponseUnchanged() throws {
        let stream = Self.stream(ending: #"{"type":"response.completed","sequence_number":5,"response":\#(Self.response)}"#)
        let (whole, differing) = StreamSplitting.sameAtEverySplit({ ResponsesAssembler() }, stream)
        #expect(differing.isEmpty, "\(differing.prefix(5))")
        #expect(whole.verdict == "complete")
        #expect(whole.document == Array(Self.response.utf8))
        var assembler = ResponsesAssembler()
        var parser = SSEParser()
        stream.withUnsafeBytes { parser.feedRaw($0) { assembler.consume($0) } }
        guard case .complete(let result) = assembler.verdict() else { Issue.record("not complete"); return }
        #expect(result.usage?["input_tokens"] == 5 && result.usage?["output_tokens"] == 3)
        #expect(result.usage?["input_tokens_details.cached_tokens"] == 2)
    }

    @Test func incompleteResponseIsAResultWithItsDetails() throws {
        let incomplete = #"{"id":"resp_1","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}"#
        let stream = Self.stream(ending: #"{"type":"response.incomplete","sequence_number":5,"response":\#(incomplete)}"#)
        let (whole, differing) = StreamSplitting.sameAtEverySplit({ ResponsesAssembler() }, stream)
        #expect(differing.isEmpty, "\(differing.prefix(5))")
        #expect(whole.document == Array(incomplete.utf8))
    }

    /// response.completed whose response says failed (or cancelled) is that failure: it was
    /// published as a success.
    @Test(arguments: [("failed", #","error":{"code":"server_error","message":"boom"}"#, "provider-error: boom"),
                      ("cancelled", "", "provider-error: the response.completed event's response has status cancelled")])
    func aCompletedEventOfAFailedResponseIsAFailure(status: String, error: String, verdict: String) throws {
        let stream = Self.stream(ending: #"{"type":"response.completed","sequence_number":5,"response":{"id":"r","object":"response","status":"\#(status)""#
            + error + #","output":[]}}"#)
        let (whole, differing) = StreamSplitting.sameAtEverySplit({ ResponsesAssembler() }, stream)
        #expect(differing.isEmpty)
        #expect(whole.verdict == verdict)
    }

    /// Not streamed either: a response that says it failed or was cancelled is no answer.
    @Test func aPlainAnswerThatSaysItFailedIsAProblem() throws {
        let cancelled = Array(#"{"id":"r","object":"response","status":"cancelled","error":null,"output":[]}"#.utf8)
        #expect(dialect.plainAnswerProblem(try cancelled.withUnsafeBytes { try RawJSON.parse($0) }, in: cancelled) == "the response has status cancelled")
        let failed = Array(#"{"id":"r","object":"response","status":"failed","error":{"message":"boom"},"output":[]}"#.utf8)
        #expect(dialect.plainAnswerProblem(try failed.withUnsafeBytes { try RawJSON.parse($0) }, in: failed) == "the response has status failed: boom")
        let completed = Array(#"{"id":"r","object":"response","status":"completed","output":[]}"#.utf8)
        #expect(dialect.plainAnswerProblem(try completed.withUnsafeBytes { try RawJSON.parse($0) }, in: completed) == nil)
    }

    @Test func failedResponseAndErrorEventsAreFailuresRetryableByCode() throws {
        let failed = Self.stream(ending: #"{"type":"response.failed","sequence_number":5,"response":{"id":"r","object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}}"#)
        let (whole, differing) = StreamSplitting.sameAtEverySplit({ ResponsesAssembler() }, failed)
        #expect(differing.isEmpty)
        #expect(whole.verdict == "provider-error: boom")
        let error = Self.stream(ending: #"{"type":"error","sequence_number":5,"code":"invalid_prompt","message":"no","param":null}"#)
        #expect(StreamSplitting.assemble(ResponsesAssembler(), error, cuts: [], spill: false).verdict == "provider-error: no")
        let chatShaped = Self.stream(ending: #"{"error":{"message":"down","code":503}}"#)
        #expect(StreamSplitting.assemble(ResponsesAssembler(), chatShaped, cuts: [], spill: false).verdict == "provider-error: down")

        func retryable(_ body: String) -> Bool {
            RetryPolicy.isRetryable(dialect.streamFailure(message: "m", body: Array(body.utf8), status: 200), headers: [:])
        }
        #expect(retryable(#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}"#))
        #expect(retryable(#"{"type":"error","code":"rate_limit_exceeded","message":"x"}"#))
        #expect(retryable(#"{"type":"error","code":null,"message":"x"}"#))
        #expect(!retryable(#"{"type":"error","code":"invalid_prompt","message":"x"}"#))
        #expect(!retryable(#"{"type":"response.failed","response":{"error":{"code":"image_too_large","message":"x"}}}"#))
        #expect(ResponsesDialect.status(ofCode: "503") == 503 && ResponsesDialect.status(ofCode: nil) == nil)
    }

    @Test func streamsThatStopOrLieAreNoSuccess() throws {
        let stopped = Self.stream(ending: #"{"type":"response.output_text.done","sequence_number":5,"text":"Hi"}"#)
        #expect(StreamSplitting.sameAtEverySplit({ ResponsesAssembler() }, stopped).whole.verdict == "incomplete")
        #expect(StreamSplitting.assemble(ResponsesAssembler(), Array("data: [DONE]\n\n".utf8), cuts: [], spill: false).verdict == "malformed")
        #expect(StreamSplitting.assemble(ResponsesAssembler(), Array("data: [1]\n\n".utf8), cuts: [], spill: false).verdict == "malformed")
        let noResponse = Self.stream(ending: #"{"type":"response.completed","sequence_number":5,"response":"x"}"#)
        #expect(StreamSplitting.assemble(ResponsesAssembler(), noResponse, cuts: [], spill: false).verdict == "malformed")
        #expect(StreamSplitting.assemble(ResponsesAssembler(), [], cuts: [], spill: false).verdict == "incomplete")
    }

    @Test func eventsAfterTheTerminalOneChangeNothing() throws {
        let stream = Self.stream(ending: #"{"type":"response.completed","sequence_number":5,"response":\#(Self.response)}"#)
            + Array("data: {\"type\":\"error\",\"message\":\"late\"}\n\ndata: nonsense\n\n".utf8)
        #expect(StreamSplitting.assemble(ResponsesAssembler(), stream, cuts: [], spill: false).document == Array(Self.response.utf8))
    }

    @Test func plainAnswerMustBeAResponse() throws {
        let good = Array(Self.response.utf8)
        guard case .success(nil, let usage) = AttemptJudge.judgePlain(status: 200, body: good, dialect: dialect) else {
            Issue.record("a response was refused")
            return
        }
        #expect(usage?["output_tokens"] == 3)
        let chat = Array(#"{"object":"chat.completion","choices":[]}"#.utf8)
        guard case .failure(let failure) = AttemptJudge.judgePlain(status: 200, body: chat, dialect: dialect) else {
            Issue.record("a chat completion passed as a response")
            return
        }
        #expect(failure.kind == .malformedResponse && failure.message.contains("Responses"))
    }

    @Test func textOfEventsAndResults() throws {
        #expect(dialect.textDelta(ofEvent: Array(#"{"type":"response.output_text.delta","delta":"H\u00e9"}"#.utf8)) == "Hé")
        #expect(dialect.textDelta(ofEvent: Array(#"{"type":"response.output_text.done","text":"Hi"}"#.utf8)) == nil)
        #expect(dialect.textDelta(ofEvent: Array("[DONE]".utf8)) == nil)
        #expect(dialect.answerText(ofResult: Array(Self.response.utf8)) == "Hi thére")
        #expect(dialect.answerText(ofResult: Array(#"{"output":[]}"#.utf8)) == nil)
        #expect(dialect.answerText(ofResult: Array("not json".utf8)) == nil)
    }
}
