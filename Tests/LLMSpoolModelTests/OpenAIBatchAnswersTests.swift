import Testing
@testable import LLMSpoolModel

@Suite struct OpenAIBatchAnswersTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func theIdOfAFileOrABatch() throws {
        #expect(try OpenAIBatchAnswers.id(bytes(#"{"id":"file-abc","object":"file","purpose":"batch"}"#)) == "file-abc")
        #expect(throws: OpenAIBatchAnswers.Problem.self) { try OpenAIBatchAnswers.id(bytes(#"{"object":"file"}"#)) }
        #expect(throws: OpenAIBatchAnswers.Problem.self) { try OpenAIBatchAnswers.id(bytes(#"{"id":""}"#)) }
        #expect(throws: OpenAIBatchAnswers.Problem.self) { try OpenAIBatchAnswers.id(bytes("<html>")) }
        #expect(throws: OpenAIBatchAnswers.Problem.self) { try OpenAIBatchAnswers.id(bytes(#"["id"]"#)) }
    }

    @Test func aBatchsStatusCountsAndFiles() throws {
        let status = try OpenAIBatchAnswers.status(bytes(#"""
            {"id":"batch_1","status":"completed","request_counts":{"total":3,"completed":2,"failed":1},
             "output_file_id":"file-out","error_file_id":"file-err","metadata":{"llmspool_group":"g1"}}
            """#))
        #expect(status == RemoteBatchStatus(status: "completed", total: 3, completed: 2, failed: 1, outputFileID: "file-out", errorFileID: "file-err"))
        #expect(status.hasEnded)
        let running = try OpenAIBatchAnswers.status(bytes(#"{"status":"in_progress","output_file_id":null,"request_counts":null}"#))
        #expect(running == RemoteBatchStatus(status: "in_progress"))
        #expect(throws: OpenAIBatchAnswers.Problem.self) { try OpenAIBatchAnswers.status(bytes(#"{"id":"batch_1"}"#)) }
    }

    @Test func countsFromTheNetworkThatDoNotFitAreNotTrappedOn() throws {
        let status = try OpenAIBatchAnswers.status(bytes(#"{"status":"in_progress","request_counts":{"total":99999999999999999999999,"completed":"2","failed":-1.5}}"#))
        #expect(status.total == 0 && status.completed == 0 && status.failed == 0)
        let negative = try OpenAIBatchAnswers.status(bytes(#"{"status":"in_progress","request_counts":{"total":-7,"completed":-9223372036854775808,"failed":3}}"#))
        #expect(negative.total == 0 && negative.completed == 0 && negative.failed == 3, "a negative count is shown as none")
        #expect(throws: OpenAIBatchAnswers.Problem.self, "a number JSON cannot hold is a refused answer") {
            try OpenAIBatchAnswers.status(bytes(#"{"status":"in_progress","request_counts":{"total":1e400}}"#))
        }
    }

    @Test func aPageOfTheListWithEachBatchsGroup() throws {
        let page = try OpenAIBatchAnswers.listing(bytes(#"""
            {"object":"list","data":[
              {"id":"batch_2","created_at":1700000100,"metadata":{"llmspool_group":"g2"}},
              {"id":"batch_1","created_at":1700000000,"metadata":null},
              {"created_at":1},
              {"id":"batch_0","created_at":99999999999999999999999,"metadata":{"other":"x"}}],
             "first_id":"batch_2","last_id":"batch_0","has_more":true}
            """#))
        #expect(page == RemoteBatchListing(entries: [.init(id: "batch_2", group: "g2", createdAt: 1700000100),
                                                     .init(id: "batch_1", group: nil, createdAt: 1700000000),
                                                     .init(id: "batch_0", group: nil, createdAt: 0)], hasMore: true))
        #expect(try OpenAIBatchAnswers.listing(bytes(#"{"data":[]}"#)) == RemoteBatchListing(entries: [], hasMore: false))
        #expect(throws: OpenAIBatchAnswers.Problem.self) { try OpenAIBatchAnswers.listing(bytes(#"{"data":{}}"#)) }
    }

    @Test func theCreateCarriesTheGroupInItsMetadata() throws {
        let body = OpenAIBatchAnswers.createBody(inputFileID: "file-1", url: "/v1/chat/completions", group: "g\"1")
        let root = try RawJSON.parse(body)
        #expect(root["input_file_id"].flatMap { RawJSON.string($0, in: body) } == "file-1")
        #expect(root["endpoint"].flatMap { RawJSON.string($0, in: body) } == "/v1/chat/completions")
        #expect(root["completion_window"].flatMap { RawJSON.string($0, in: body) } == "24h")
        #expect(root["metadata"]?["llmspool_group"].flatMap { RawJSON.string($0, in: body) } == "g\"1")
    }

    @Test func theProvidersErrorMessage() {
        #expect(OpenAIBatchAnswers.errorMessage(bytes(#"{"error":{"message":"Rate limit","type":"x"}}"#)) == "Rate limit")
        #expect(OpenAIBatchAnswers.errorMessage(bytes("oops")) == nil)
    }
}
