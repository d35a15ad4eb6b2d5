import Testing
@testable import LLMSpoolModel

@Suite struct MessagesDialectTests {
    func validate(_ body: String) -> Result<RequestSummary, RequestProblem> {
        RequestValidator.validate(Array(#"{"url": "/v1/messages",\#n "body": \#(body)}"#.utf8))
    }

    func problem(_ body: String) -> RequestProblem? {
        if case .failure(let problem) = validate(body) { return problem }
        return nil
    }

    /// The column on line 2 (where `validate` puts the body) of the first `needle` after `after`.
    func column(of needle: String, after: String, in body: String) -> Int {
        let line = Array((#" "body": "# + body).utf8)
        let from = line.firstRange(of: Array(after.utf8))!.upperBound
        return line[from...].firstRange(of: Array(needle.utf8))!.lowerBound + 1
    }

    @Test func isRegisteredForAnthropicEndpoints() throws {
        let dialect = try #require(DialectRegistry.dialect(url: "/v1/messages"))
        #expect(dialect.id == MessagesDialect.id)
        #expect(dialect.api == .anthropic)
        #expect(dialect.path == "/v1/messages")
        #expect(DialectRegistry.dialect(id: "messages")?.url == "/v1/messages")
        #expect(dialect.usageMember.isEmpty)
    }

    @Test func validRequestIsSummarised() throws {
        let summary = try validate(#"{"model": "messages-model", "max_tokens": 100, "system": "12345678", "stream": true, "messages": [{"role": "user", "content": "abcd"}, {"role": "user", "content": [{"type": "text", "text": "efgh"}]}]}"#).get()
        #expect(summary.dialect == MessagesDialect.id)
        #expect(summary.model == "messages-model")
        #expect(summary.stream)
        #expect(summary.usageSplice == nil)
        // 16 characters of text: 4 tokens, plus one, plus the output budget.
        #expect(summary.estimatedTokens == 4 + 1 + 100)
    }

    @Test func hugeMaxTokensIsClampedNotOverflowed() throws {
        let summary = try validate(#"{"model": "m", "max_tokens": 99999999999999999999999, "messages": []}"#).get()
        #expect(summary.estimatedTokens == 1 + (1 << 40))
    }

    @Test func missingMembersAreNamed() throws {
        let noModel = try #require(problem(#"{"max_tokens": 5, "messages": []}"#))
        #expect(noModel.kind == .missingField)
        #expect(noModel.message.contains("\"model\""))
        #expect(noModel.line == 2 && noModel.column == 10)
        let noMax = try #require(problem(#"{"model": "m", "messages": []}"#))
        #expect(noMax.kind == .missingField)
        #expect(noMax.message.contains("\"max_tokens\""))
        #expect(noMax.line != nil)
        let noMessages = try #require(problem(#"{"model": "m", "max_tokens": 5}"#))
        #expect(noMessages.kind == .missingField)
        #expect(noMessages.message.contains("\"messages\""))
    }

    @Test(arguments: ["0", "-1", "1.5", "1e3", "\"10\"", "null", "true"])
    func maxTokensMustBeAPositiveInteger(value: String) throws {
        let body = #"{"model": "m", "max_tokens": \#(value), "messages": []}"#
        let found = try #require(problem(body))
        #expect(found.kind == .wrongType)
        #expect(found.message.contains("\"max_tokens\" must be a positive integer"))
        #expect(found.line == 2 && found.column == column(of: value, after: "max_tokens", in: body))
    }

    @Test func wrongTypesArePlacedAtTheirValue() throws {
        let body = #"{"model": "m", "max_tokens": 1, "messages": {}}"#
        let messages = try #require(problem(body))
        #expect(messages.kind == .wrongType)
        #expect(messages.message.contains("\"messages\" must be an array"))
        #expect(messages.line == 2 && messages.column == column(of: "{}", after: "messages", in: body))
        let modelBody = #"{"model": 3, "max_tokens": 1, "messages": []}"#
        let model = try #require(problem(modelBody))
        #expect(model.kind == .wrongType && model.column == column(of: "3", after: "model", in: modelBody))
        let stream = try #require(problem(#"{"model": "m", "max_tokens": 1, "messages": [], "stream": "yes"}"#))
        #expect(stream.kind == .wrongType && stream.message.contains("\"stream\""))
    }

    @Test func headersCarryTheKeyAsXAPIKeyAndTheVersion() {
        let dialect: any Dialect = MessagesDialect()
        #expect(dialect.headers(apiKey: "sk-ant") == ["x-api-key: sk-ant", "anthropic-version: 2023-06-01"])
        #expect(dialect.headers(apiKey: "sk-ant", anthropicVersion: "2024-01-01") == ["x-api-key: sk-ant", "anthropic-version: 2024-01-01"])
        #expect(dialect.headers(apiKey: nil, anthropicVersion: "v") == ["anthropic-version: v"])
        #expect(!dialect.headers(apiKey: "k").contains { $0.lowercased().hasPrefix("authorization") })
        // Chat ignores the version: its endpoints speak OpenAI.
        #expect(ChatCompletionsDialect().headers(apiKey: "k", anthropicVersion: "v") == ["Authorization: Bearer k"])
    }

    @Test func plainAnswerMustBeAMessage() {
        let dialect = MessagesDialect()
        let message = Array(#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}"#.utf8)
        #expect(AttemptJudge.judgePlain(status: 200, body: message, dialect: dialect) == .success(assembled: nil, usage: ["input_tokens": 3, "output_tokens": 1, "input": 3, "output": 1]))
        for body in [#"{"object":"chat.completion","choices":[]}"#, #"{"type":"completion","content":[]}"#, #"{"type":"message"}"#] {
            guard case .failure(let failure) = AttemptJudge.judgePlain(status: 200, body: Array(body.utf8), dialect: dialect) else {
                Issue.record("\(body) was taken for a message")
                continue
            }
            #expect(failure.kind == .malformedResponse)
        }
        // Chat answers are not checked for a type.
        guard case .success = AttemptJudge.judgePlain(status: 200, body: Array(#"{"choices":[]}"#.utf8)) else {
            Issue.record("a chat answer was refused")
            return
        }
    }

    @Test func streamErrorsAreRetryableByTheirType() {
        let dialect = MessagesDialect()
        let overloaded = Array(#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.utf8)
        let failure = dialect.streamFailure(message: "Overloaded", body: overloaded, status: 200)
        #expect(failure.kind == .providerError)
        #expect(failure.embeddedCode == 529)
        #expect(RetryPolicy.isRetryable(failure, headers: [:]))
        let invalid = Array(#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#.utf8)
        #expect(!RetryPolicy.isRetryable(dialect.streamFailure(message: "bad", body: invalid, status: 200), headers: [:]))
        let rate = Array(#"{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}"#.utf8)
        #expect(RetryPolicy.isRetryable(dialect.streamFailure(message: "slow", body: rate, status: 200), headers: [:]))
        let unknown = Array(#"{"type":"error","error":{"type":"new_error","message":"?"}}"#.utf8)
        #expect(dialect.streamFailure(message: "?", body: unknown, status: 200).embeddedCode == nil)
    }

    @Test func textOfEventsAndResults() {
        let dialect = MessagesDialect()
        #expect(dialect.textDelta(ofEvent: Array(#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"H\u00e9"}}"#.utf8)) == "Hé")
        #expect(dialect.textDelta(ofEvent: Array(#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#.utf8)) == nil)
        #expect(dialect.textDelta(ofEvent: Array(#"{"type":"ping"}"#.utf8)) == nil)
        #expect(dialect.answerText(ofResult: Array(#"{"type":"message","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#.utf8)) == "ab")
        #expect(dialect.answerText(ofResult: Array(#"{"choices":[]}"#.utf8)) == nil)
    }
}
