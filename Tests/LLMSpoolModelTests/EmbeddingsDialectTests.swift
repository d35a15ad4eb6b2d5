import Testing
@testable import LLMSpoolModel

@Suite struct EmbeddingsDialectTests: DialectTesting {
    static let url = "/v1/embeddings"

    @Test func validationNeverStreams() throws {
        #expect(dialect.id == "embeddings" && dialect.path == "/embeddings" && dialect.api == .openai && dialect.usageMember.isEmpty)
        let summary = try RequestValidator.validate(envelope(#"{"model":"e","input":["12345678","abcd"]}"#)).get()
        #expect(summary.dialect == "embeddings" && !summary.stream && summary.usageSplice == nil)
        #expect(summary.estimatedTokens == 12 / 4 + 1)
        #expect(try RequestValidator.validate(envelope(#"{"model":"e","input":[1,2,3],"stream":false}"#)).get().estimatedTokens == 12 / 4 + 1)
        #expect(problem(#"{"input":"x"}"#)?.message == #"the request has no "model""#)
        #expect(problem(#"{"model":"e"}"#)?.message == #"the request has no "input""#)
        #expect(problem(#"{"model":"e","input":null}"#)?.kind == .missingField)
        let empty = try #require(problem(#"{"model":"e","input":[]}"#))
        #expect(empty.message == #""input" must not be an empty array"# && empty.column == 53)
        #expect(problem(#"{"model":"e","input":true}"#)?.message == #""input" must be a string or an array, not a boolean"#)
        let streamed = try #require(problem(#"{"model":"e","input":"x","stream":true}"#))
        #expect(streamed.kind == .unsupported && streamed.message.contains("do not stream"))
    }

    @Test func plainAnswerMustBeAnEmbeddingList() throws {
        let good = Array(#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"e","usage":{"prompt_tokens":3,"total_tokens":3}}"#.utf8)
        guard case .success(nil, let usage) = AttemptJudge.judgePlain(status: 200, body: good, dialect: dialect) else {
            Issue.record("an embedding list was refused")
            return
        }
        #expect(usage?["prompt_tokens"] == 3)
        for bad in [#"{"object":"list"}"#, #"{"object":"text_completion","data":[]}"#] {
            guard case .failure(let failure) = AttemptJudge.judgePlain(status: 200, body: Array(bad.utf8), dialect: dialect) else {
                Issue.record("\(bad) passed")
                continue
            }
            #expect(failure.kind == .malformedResponse)
        }
    }

    @Test func aPersonSeesCountAndDimensions() throws {
        let two = Array(#"{"object":"list","data":[{"embedding":[0.1,0.2,0.3]},{"embedding":[1,2,3]}]}"#.utf8)
        #expect(EmbeddingsDialect.summary(ofResult: two) == "2 embeddings of 3 dimensions")
        // base64: 8 characters are 6 bytes, one float32 and a half; 16 are 12 bytes, 3 floats.
        let encoded = Array(#"{"object":"list","data":[{"embedding":"AAAAAAAAAAAAAAAA"}]}"#.utf8)
        #expect(EmbeddingsDialect.summary(ofResult: encoded) == "1 embedding of 3 dimensions")
        #expect(EmbeddingsDialect.summary(ofResult: Array("x".utf8)) == nil)
        #expect(dialect.answerText(ofResult: two) == nil && dialect.textDelta(ofEvent: two) == nil)
    }
}
