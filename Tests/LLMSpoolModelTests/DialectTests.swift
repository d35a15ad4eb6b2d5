import Testing
@testable import LLMSpoolModel

/// A dialect for tests only: named by the url `/v1/test`, summarised without rules of its own.
private struct InputDialect: Dialect {
    var id: String { "test.input" }
    var url: String { "/v1/test" }
    var api: EndpointAPI { .openai }
    var path: String { "/test" }
    var usageMember: [UInt8] { [] }
    func summarise(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<RequestSummary, RequestProblem> {
        .success(RequestSummary(model: "x", stream: false, size: bytes.count))
    }
    func headers(apiKey: String?) -> [String] { [] }
    func makeAssembler() -> any StreamAssembling { StreamAssembler() }
    func usage(ofPlainAnswer answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]? { ["seen": 1] }
    func streamFailure(message: String, body: [UInt8], status: Int) -> AttemptFailure {
        AttemptFailure(.providerError, "test: \(message)", httpStatus: status)
    }
    func textDelta(ofEvent payload: [UInt8]) -> String? { nil }
    func answerText(ofResult result: [UInt8]) -> String? { nil }
}

@Suite struct DialectRegistryTests {
    @Test func idsAreUniqueAndFoundAgain() throws {
        let ids = DialectRegistry.all.map(\.id)
        #expect(Set(ids).count == ids.count)
        for id in ids { #expect(DialectRegistry.dialect(id: id)?.id == id) }
        #expect(DialectRegistry.dialect(id: "no.such.dialect") == nil)
        #expect(DialectRegistry.fallback.id == ChatCompletionsDialect.id)
    }

    @Test func summaryOfAnUnknownDialectGetsTheFallback() throws {
        var summary = RequestSummary(model: "m", stream: false, size: 2)
        #expect(DialectRegistry.dialect(for: summary).id == ChatCompletionsDialect.id)
        summary.dialect = "no.such.dialect"
        #expect(DialectRegistry.dialect(for: summary).id == DialectRegistry.fallback.id)
    }

    @Test func validatorStampsTheDialectItsEnvelopeNames() throws {
        let chat = Array(#"{"model":"m","messages":[]}"#.utf8)
        let input = Array(#"{"url":"/v1/test","body":{"model":"m","input":"hi"}}"#.utf8)
        let dialects: [any Dialect] = [ChatCompletionsDialect(), InputDialect()]
        #expect(try RequestValidator.validate(chat).get().dialect == ChatCompletionsDialect.id)
        #expect(try RequestValidator.validate(chat, dialects: dialects).get().dialect == ChatCompletionsDialect.id)
        #expect(try RequestValidator.validate(input, dialects: dialects).get().dialect == "test.input")
        #expect(try RequestValidator.validate(input, dialects: [InputDialect(), ChatCompletionsDialect()]).get().dialect == "test.input")
        let inChat = Array(#"{"url":"/v1/chat/completions","body":{"model":"m","messages":[]}}"#.utf8)
        #expect(try RequestValidator.validate(inChat, dialects: dialects).get().dialect == ChatCompletionsDialect.id)
    }

    @Test func bareRequestIsValidatedAsTheFirst() throws {
        let neither = Array(#"{"model":"m","input":"hi"}"#.utf8)
        let dialects: [any Dialect] = [ChatCompletionsDialect(), InputDialect()]
        guard case .failure(let problem) = RequestValidator.validate(neither, dialects: dialects) else {
            Issue.record("a bare body without messages passed as chat")
            return
        }
        #expect(problem.message == #"the request has no "messages""#)
        #expect(problem.line == 1 && problem.column == 1, "a dialect's problem is placed at its body")
    }

    @Test func envelopeURLNotRegisteredIsRefusedListingTheSupportedOnes() throws {
        let other = Array(#"{"url":"/v1/test","body":{"model":"m","input":"hi"}}"#.utf8)
        guard case .failure(let problem) = RequestValidator.validate(other) else {
            Issue.record("an unregistered url passed")
            return
        }
        #expect(problem.kind == .unsupported)
        #expect(problem.message.contains("/v1/chat/completions"), "\(problem.message)")
        #expect(problem.line == 1 && problem.column == 8)
    }

    @Test func sharedChecksComeBeforeAnyDialect() throws {
        let mark = [0xEF, 0xBB, 0xBF] + Array(#"{"input":1}"#.utf8)
        #expect(try InputDialect().validate(mark).get().body == 3..<mark.count)
        #expect(try InputDialect().validate(mark).get().dialect == "test.input")
        guard case .failure(let problem) = InputDialect().validate(Array("[1]".utf8)) else {
            Issue.record("an array passed")
            return
        }
        #expect(problem.kind == .notAnObject)
    }

    @Test func judgeAsksTheDialect() throws {
        let body = Array(#"{"choices":[],"usage":{"total_tokens":4}}"#.utf8)
        #expect(AttemptJudge.judgePlain(status: 200, body: body, dialect: InputDialect()) == .success(assembled: nil, usage: ["seen": 1]))
        #expect(AttemptJudge.judgeStream(status: 200, verdict: .providerError(message: "m", body: []), dialect: InputDialect())
            == .failure(AttemptFailure(.providerError, "test: m", httpStatus: 200)))
    }
}

@Suite struct ChatCompletionsDialectTests {
    let dialect: any Dialect = DialectRegistry.dialect(id: ChatCompletionsDialect.id)!

    @Test func endpointPathAndHeaders() throws {
        #expect(dialect.path == "/chat/completions")
        #expect(dialect.headers(apiKey: "k") == ["Authorization: Bearer k"])
        #expect(dialect.headers(apiKey: nil) == [])
    }

    @Test func validationIsTheValidators() throws {
        let text = #"{"model":"m","stream":true,"messages":[{"role":"user","content":"12345678"}],"max_tokens":10}"#
        let summary = try dialect.validate(Array(text.utf8)).get()
        #expect(summary == (try RequestValidator.validate(Array(text.utf8)).get()))
        #expect(summary.model == "m" && summary.stream && summary.usageSplice == 0)
        #expect(summary.estimatedTokens == 8 / 4 + 1 + 10)
        guard case .failure(let problem) = dialect.validate(Array(#"{"model":"m","messages":{}}"#.utf8)) else {
            Issue.record("messages as an object passed")
            return
        }
        #expect(problem.message == #""messages" must be an array, not an object"#)
    }

    @Test func assemblerThroughTheProtocolMatchesTheStreamAssembler() throws {
        let payloads = [
            #"{"id":"c","model":"m","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}"#,
            #"{"id":"c","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}],"usage":{"total_tokens":2}}"#,
            "[DONE]",
        ]
        var direct = StreamAssembler()
        var plugged = dialect.makeAssembler()
        #expect(plugged.contentHead == StreamAssembler.contentHead)
        for payload in payloads {
            var text = payload
            text.withUTF8 { bytes in
                direct.consume(.data(UnsafeRawBufferPointer(bytes)))
                plugged.consume(.data(UnsafeRawBufferPointer(bytes)))
            }
        }
        #expect(plugged.heldContentCount == "Hi there".utf8.count)
        #expect(plugged.verdict() == direct.verdict())
        #expect(plugged.takeContent() == Array("Hi there".utf8))
        #expect(plugged.heldContentCount == 0)
    }

    @Test func usageMemberSplicedAtTheSummarysOffsetAsksForUsage() throws {
        let text = Array(#"  {"model":"m","stream":true,"messages":[]}"#.utf8)
        let summary = try dialect.validate(text).get()
        let brace = try #require(summary.usageSplice)
        let spliced = Array(text[...brace]) + dialect.usageMember + Array(text[(brace + 1)...])
        let request = try RawJSON.parse(spliced)
        guard case .bool(true, _)? = request["stream_options"]?["include_usage"] else {
            Issue.record("the spliced request does not ask for usage")
            return
        }
        #expect(RawJSON.string(request["model"]!, in: spliced) == "m")
        // Alone, as the engine merges it into a rewritten body.
        let alone = [UInt8(ascii: "{")] + dialect.usageMember.dropLast() + [UInt8(ascii: "}")]
        guard case .object(let members, _) = try RawJSON.parse(alone) else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == ["stream_options"])
    }

    @Test func textOfEventsAndResults() throws {
        #expect(dialect.textDelta(ofEvent: Array(#"{"choices":[{"index":0,"delta":{"content":"H\u00e9"}}]}"#.utf8)) == "Hé")
        #expect(dialect.textDelta(ofEvent: Array(#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#.utf8)) == nil)
        #expect(dialect.textDelta(ofEvent: Array(#"{"choices":[]}"#.utf8)) == nil)
        #expect(dialect.textDelta(ofEvent: Array("[DONE]".utf8)) == nil)
        #expect(dialect.answerText(ofResult: Array(#"{"choices":[{"message":{"role":"assistant","content":"a\nb"}}]}"#.utf8)) == "a\nb")
        #expect(dialect.answerText(ofResult: Array(#"{"choices":[{"message":{"content":null}}]}"#.utf8)) == nil)
        #expect(dialect.answerText(ofResult: Array("not json".utf8)) == nil)
    }

    @Test func usageOfAPlainAnswer() throws {
        let body = Array(#"{"choices":[],"usage":{"prompt_tokens":3,"total_tokens":5,"details":{}}}"#.utf8)
        let answer = try RawJSON.parse(body)
        #expect(dialect.usage(ofPlainAnswer: answer, in: body) == ["prompt_tokens": 3, "total_tokens": 5])
        #expect(AttemptJudge.judgePlain(status: 200, body: body, dialect: dialect) == .success(assembled: nil, usage: ["prompt_tokens": 3, "total_tokens": 5, "input": 3]))
        let none = Array(#"{"choices":[]}"#.utf8)
        #expect(dialect.usage(ofPlainAnswer: try RawJSON.parse(none), in: none) == nil)
    }

    /// A count from the network that no token count can be (negative, fractional, past
    /// Int) is not read: a negative one would make the totals and the metrics' counters go down.
    @Test func aCountNoTokenCountCanBeIsNotRead() throws {
        let body = Array(#"{"choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":2.5,"total_tokens":99999999999999999999999,"cached":7,"details":{"reasoning_tokens":-1,"cached_tokens":4}}}"#.utf8)
        let answer = try RawJSON.parse(body)
        #expect(dialect.usage(ofPlainAnswer: answer, in: body) == ["cached": 7, "details.cached_tokens": 4])
    }

    @Test func inStreamErrorIsAProviderErrorWithItsEmbeddedCode() throws {
        let body = Array(#"{"error":{"message":"overloaded","code":503}}"#.utf8)
        let failure = dialect.streamFailure(message: "overloaded", body: body, status: 200)
        #expect(failure.kind == .providerError)
        #expect(failure.httpStatus == 200)
        #expect(failure.providerBody == body)
        #expect(failure.embeddedCode == 503)
        #expect(AttemptJudge.judgeStream(status: 200, verdict: .providerError(message: "overloaded", body: body), dialect: dialect) == .failure(failure))
    }
}
