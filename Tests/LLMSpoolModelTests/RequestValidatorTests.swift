import Testing
@testable import LLMSpoolModel

@Suite struct RequestValidatorTests {
    func problem(_ text: String) -> RequestProblem? {
        problem(Array(text.utf8))
    }

    func problem(_ bytes: [UInt8]) -> RequestProblem? {
        if case .failure(let problem) = RequestValidator.validate(bytes) { return problem }
        return nil
    }

    @Test func aValidRequestIsSummarised() throws {
        let text = #"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}"#
        let summary = try RequestValidator.validate(Array(text.utf8)).get()
        #expect(summary == RequestSummary(model: "m", stream: true, size: text.utf8.count, estimatedTokens: 1, usageSplice: 0))
        let plain = try RequestValidator.validate(Array(#"{"model":"m","messages":[],"stream":null}"#.utf8)).get()
        #expect(plain.stream == false)
    }

    @Test func aStreamWithoutStreamOptionsIsAskedForItsUsage() throws {
        let text = "\n  " + #"{"model":"m","stream":true,"messages":[]}"#
        let summary = try RequestValidator.validate(Array(text.utf8)).get()
        let brace = try #require(summary.usageSplice)
        #expect(brace == 3)
        // What the transfer sends: the bytes up to the brace, the member, the rest.
        let bytes = Array(text.utf8)
        let sent = Array(bytes[...brace]) + Array(#""stream_options":{"include_usage":true},"#.utf8) + Array(bytes[(brace + 1)...])
        let object = try #require(JSONObject.parse(sent))
        #expect((object["stream_options"] as? [String: Any])?["include_usage"] as? Bool == true)
        #expect(object["model"] as? String == "m")
        let asked = #"{"model":"m","stream":true,"stream_options":{"include_usage":false},"messages":[]}"#
        #expect(try RequestValidator.validate(Array(asked.utf8)).get().usageSplice == nil, "the request's own choice stands")
        #expect(try RequestValidator.validate(Array(#"{"model":"m","messages":[]}"#.utf8)).get().usageSplice == nil)
    }

    @Test func tokensAreEstimatedFromPromptAndBudget() throws {
        let text = #"{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"12345678"},{"role":"user","content":[{"type":"text","text":"abcd"}]}]}"#
        #expect(try RequestValidator.validate(Array(text.utf8)).get().estimatedTokens == 12 / 4 + 1 + 100)
    }

    @Test func invalidJSONNamesLineAndColumn() throws {
        let found = try #require(problem("{\n  \"model\": \"m\",\n  \"messages\": [x]\n}"))
        #expect(found.kind == .invalidJSON)
        #expect(found.line == 3)
        #expect(found.column == 16)
        #expect(found.description.contains("line 3, column 16"))
    }

    @Test func truncatedJSONPointsAtTheEnd() throws {
        let found = try #require(problem("{\"model\": \"m\","))
        #expect(found.kind == .invalidJSON)
        #expect(found.line == 1)
    }

    @Test func emptyFilesAreInvalid() {
        #expect(problem("")?.kind == .invalidJSON)
        #expect(problem("")?.message.contains("empty") == true)
    }

    @Test func nonUTF8IsRefusedWithItsOffset() throws {
        let found = try #require(problem([0x7B, 0x22, 0xFF, 0x22, 0x7D]))
        #expect(found.kind == .notUTF8)
        #expect(found.message.contains("offset 2"))
        // UTF-16 with a BOM: Foundation would decode it, but the daemon sends bytes as they are.
        let utf16: [UInt8] = [0xFF, 0xFE] + Array(#"{"model":"m","messages":[]}"#.utf8).flatMap { [$0, 0] }
        #expect(problem(utf16)?.kind == .notUTF8)
        #expect(problem([0xED, 0xA0, 0x80])?.kind == .notUTF8, "an encoded surrogate is not UTF-8")
        #expect(problem([0xC0, 0x80])?.kind == .notUTF8, "an overlong encoding is not UTF-8")
    }

    @Test(arguments: [
        (#"[1,2]"#, RequestProblem.Kind.notAnObject, "an array"),
        (#""text""#, .notAnObject, "a string"),
        (#"{"messages":[]}"#, .missingField, "\"model\""),
        (#"{"model":7,"messages":[]}"#, .wrongType, "a number"),
        (#"{"model":"","messages":[]}"#, .wrongType, "non-empty"),
        (#"{"model":true,"messages":[]}"#, .wrongType, "a boolean"),
        (#"{"model":"m"}"#, .missingField, "\"messages\""),
        (#"{"model":"m","messages":{}}"#, .wrongType, "an object"),
        (#"{"model":"m","messages":[],"stream":1}"#, .wrongType, "a number"),
        (#"{"model":"m","messages":[],"stream":"yes"}"#, .wrongType, "a string"),
    ])
    func structuralProblemsAreNamed(text: String, kind: RequestProblem.Kind, mention: String) throws {
        let found = try #require(problem(text))
        #expect(found.kind == kind)
        #expect(found.message.contains(mention), "\(found.message)")
    }
}
