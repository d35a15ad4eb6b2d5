import Testing
@testable import LLMSpoolModel

@Suite struct UsageNamesTests {
    func normalised(_ usage: String) throws -> [String: Int] {
        let bytes = Array(usage.utf8)
        return UsageNames.normalised(try #require(AttemptJudge.counts(try RawJSON.parse(bytes), in: bytes)))
    }

    @Test func chatAndCompletions() throws {
        let usage = try normalised(#"{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,"prompt_tokens_details":{"cached_tokens":6},"completion_tokens_details":{"reasoning_tokens":2}}"#)
        #expect(usage == ["prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
                          "input": 10, "output": 4, "cached_input": 6, "reasoning": 2])
    }

    @Test func responses() throws {
        let usage = try normalised(#"{"input_tokens":9,"input_tokens_details":{"cached_tokens":1,"cache_write_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":12}"#)
        #expect(usage == ["input_tokens": 9, "output_tokens": 3, "total_tokens": 12,
                          "input": 9, "output": 3, "cached_input": 1, "reasoning": 0])
    }

    @Test func embeddingsHaveInputOnly() throws {
        #expect(try normalised(#"{"prompt_tokens":8,"total_tokens":8}"#) == ["prompt_tokens": 8, "total_tokens": 8, "input": 8])
    }

    @Test func anthropicInputCountsTheCachedTokensToo() throws {
        let usage = try normalised(#"{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":7,"service_tier":"standard"}"#)
        #expect(usage == ["input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 7,
                          "input": 125, "output": 7, "cached_input": 100])
    }

    @Test func hugeCountsSaturate() throws {
        let usage = UsageNames.normalised(["input_tokens": Int.max, "cache_read_input_tokens": 5])
        #expect(usage["input"] == Int.max)
        #expect(UsageNames.normalised([:]) == [:])
    }
}
