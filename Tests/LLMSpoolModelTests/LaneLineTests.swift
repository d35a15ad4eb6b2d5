import Testing
@testable import LLMSpoolModel

@Suite struct LaneLineTests {
    @Test func anInputLineIsABatchLineAroundTheBodyInPlace() throws {
        let body = Array(#"{"model":"m","messages":[{"role":"user","content":"é \"q\""}]}"#.utf8)
        let line = LaneInputLine.prefix(customID: "req \"1\"", url: "/v1/chat/completions") + body + LaneInputLine.suffix
        #expect(line.count == LaneInputLine.size(customID: "req \"1\"", url: "/v1/chat/completions", bodyBytes: body.count))
        #expect(line.last == 0x0A && line.dropLast().contains(0x0A) == false)
        let parsed = try RawJSON.parse(Array(line.dropLast()))
        #expect(parsed["custom_id"].flatMap { RawJSON.string($0, in: line) } == "req \"1\"")
        #expect(parsed["method"].flatMap { RawJSON.string($0, in: line) } == "POST")
        #expect(parsed["url"].flatMap { RawJSON.string($0, in: line) } == "/v1/chat/completions")
        #expect(parsed["body"].map { Array(line[$0.range]) } == body)
        let asBatchLine = try BatchLine.read(Array(line.dropLast()), at: 0, fileSize: line.count).get()
        #expect(asBatchLine.customID == "req \"1\"" && asBatchLine.summary.body == line.count - 2 - body.count..<line.count - 2,
                "the batch files' own reader takes it, body in place")
    }

    @Test func aSucceededLineGivesTheBodyAsSent() throws {
        let body = #"{"id":"chatcmpl-1","object":"chat.completion","choices":[]}"#
        let line = Array(#"{"id":"batch_req_1","custom_id":"a","response":{"status_code":200,"request_id":"req_9","body":\#(body)},"error":null}"#.utf8)
        let read = try LaneOutputLine.read(line)
        #expect(read.customID == "a")
        #expect(read.result == .succeeded(status: 200, requestID: "req_9", body: Array(body.utf8)))
    }

    @Test func failedLinesKeepTheProvidersStatusBodyAndError() throws {
        let refused = Array(#"{"id":"x","custom_id":"b","response":{"status_code":400,"request_id":null,"body":{"error":{"message":"no"}}},"error":null}"#.utf8)
        #expect(try LaneOutputLine.read(refused).result
                == .failed(code: "http", message: "the endpoint answered HTTP 400 in the batch", status: 400, body: Array(#"{"error":{"message":"no"}}"#.utf8)))
        let expired = Array(#"{"id":"x","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}"#.utf8)
        #expect(try LaneOutputLine.read(expired).result
                == .failed(code: "batch_expired", message: "This request could not be executed before the completion window expired.", status: nil, body: nil))
        let notObject = Array(#"{"custom_id":"d","response":{"status_code":200,"body":"text"}}"#.utf8)
        #expect(try LaneOutputLine.read(notObject).result
                == .failed(code: "invalid-answer", message: "the batch's answer is not a JSON object", status: 200, body: Array(#""text""#.utf8)))
    }

    @Test func unreadableLinesAreProblemsNamed() {
        let cases: [(String, String)] = [
            ("[1]", "not a JSON object"),
            (#"{"response":{"status_code":200,"body":{}}}"#, "no custom_id"),
            (#"{"custom_id":"e","response":null,"error":null}"#, "e: no response status_code and no error"),
            (#"{"custom_id":"e","response":{"status_code":99999999999999999999999,"body":{}}}"#, "e: no response status_code and no error"),
        ]
        for (text, problem) in cases {
            #expect(throws: LaneOutputLine.Problem(description: problem)) { try LaneOutputLine.read(Array(text.utf8)) }
        }
        #expect(throws: LaneOutputLine.Problem.self) { try LaneOutputLine.read(Array(#"{"custom_id":"#.utf8)) }
    }
}
