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

    /// An answer as deep as a live one may be (128 levels) sits two levels down in its line:
    /// read, not refused as too deep.
    @Test func anAnswerAsDeepAsALiveOneIsReadFromItsLine() throws {
        let deepest = String(repeating: "[", count: 127) + String(repeating: "]", count: 127)
        let body = #"{"choices":\#(deepest)}"#
        #expect((try? RawJSON.parse(Array(body.utf8))) != nil, "as deep as a live answer may be")
        let line = Array(#"{"id":"batch_req_1","custom_id":"a","response":{"status_code":200,"request_id":null,"body":\#(body)},"error":null}"#.utf8)
        #expect(try LaneOutputLine.read(line).result == .succeeded(status: 200, requestID: nil, body: Array(body.utf8)))
    }

    @Test func failedLinesKeepTheProvidersStatusBodyAndError() throws {
        let refused = Array(#"{"id":"x","custom_id":"b","response":{"status_code":400,"request_id":null,"body":{"error":{"message":"no"}}},"error":null}"#.utf8)
        #expect(try LaneOutputLine.read(refused).result
                == .failed(code: "http", message: "the endpoint answered HTTP 400 in the batch", status: 400, body: Array(#"{"error":{"message":"no"}}"#.utf8)))
        let expired = Array(#"{"id":"x","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}"#.utf8)
        #expect(try LaneOutputLine.read(expired).result == .expired, "OpenAI's word for a line its window passed")
        let cancelled = Array(#"{"id":"x","custom_id":"c","response":null,"error":{"code":"batch_cancelled","message":"cancelled"}}"#.utf8)
        #expect(try LaneOutputLine.read(cancelled).result == .cancelled)
        let failed = Array(#"{"id":"x","custom_id":"c","response":null,"error":{"code":"server_error","message":"boom"}}"#.utf8)
        #expect(try LaneOutputLine.read(failed).result == .failed(code: "server_error", message: "boom", status: nil, body: nil))
        let notObject = Array(#"{"custom_id":"d","response":{"status_code":200,"body":"text"}}"#.utf8)
        #expect(try LaneOutputLine.read(notObject).result
                == .failed(code: "invalid-answer", message: "the batch's answer is not a JSON object", status: 200, body: Array(#""text""#.utf8)))
    }

    @Test func eachMembersVerdictFollowsItsLineAndTheBatchsStatus() {
        let body = Array(#"{"id":"c"}"#.utf8)
        #expect(LaneMemberVerdict.decide(line: .succeeded(status: 200, requestID: "r", body: body), batchStatus: "expired", batch: "b")
                == .response(status: 200, requestID: "r", body: body), "an answer is an answer, whatever the batch's end")
        #expect(LaneMemberVerdict.decide(line: .failed(code: "http", message: "m", status: 429, body: body), batchStatus: "completed", batch: "b")
                == .response(status: 429, requestID: nil, body: body), "an HTTP failure is judged by the usual rules")
        #expect(LaneMemberVerdict.decide(line: .failed(code: "server_error", message: "boom", status: nil, body: nil), batchStatus: "completed", batch: "b")
                == .failed(message: "the remote batch b reported server_error: boom"))
        #expect(LaneMemberVerdict.decide(line: .failed(code: "http", message: "m", status: 500, body: nil), batchStatus: "completed", batch: "b")
                == .failed(message: "the remote batch b reported http: m"), "a status without a body is no answer to publish")
        let expired = LaneMemberVerdict.expired(message: "the remote batch b expired before this request ran (the provider's 24h window passed)")
        #expect(LaneMemberVerdict.decide(line: .expired, batchStatus: "completed", batch: "b") == expired)
        #expect(LaneMemberVerdict.decide(line: nil, batchStatus: "expired", batch: "b") == expired, "an expired batch may list only what ran")
        #expect(LaneMemberVerdict.decide(line: .cancelled, batchStatus: "cancelled", batch: "b")
                == .failed(message: "the remote batch b was cancelled before this request ran"))
        #expect(LaneMemberVerdict.decide(line: nil, batchStatus: "completed", batch: "b")
                == .failed(message: "the remote batch b ended completed with no line for this request"))
        #expect(LaneMemberVerdict.decide(line: nil, batchStatus: nil, batch: "b")
                == .failed(message: "the remote batch b ended without a status with no line for this request"))
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
