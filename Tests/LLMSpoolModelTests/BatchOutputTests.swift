import Testing
@testable import LLMSpoolModel

@Suite struct BatchOutputTests {
    func parsed(_ bytes: [UInt8]) throws -> RawJSON.Value {
        #expect(bytes.last == 0x0A)
        #expect(bytes.dropLast().firstIndex(of: 0x0A) == nil, "one line")
        return try RawJSON.parse(Array(bytes.dropLast()))
    }

    func string(_ value: RawJSON.Value?, _ bytes: [UInt8]) -> String? {
        value.flatMap { RawJSON.string($0, in: Array(bytes.dropLast())) }
    }

    @Test func aSuccessIsOpenAIsShapeOnOneLine() throws {
        let body = Array("{\n  \"id\": \"c1\",\n  \"object\": \"chat.completion\",\n  \"note\": \"a b\\n\"\n}".utf8)
        let line = BatchOutputLine.encode(kind: .openai, batch: "b", entry: 3, customID: "q\"3", result: .succeeded(status: 200, requestID: "req_1", body: body))
        let value = try parsed(line)
        #expect(string(value["custom_id"], line) == "q\"3")
        #expect(string(value["id"], line)?.hasPrefix("batch_req_") == true)
        #expect(value["error"]?.isNull == true)
        #expect(string(value["response"]?["request_id"], line) == "req_1")
        #expect(string(value["response"]?["body"]?["note"], line) == "a b\n", "strings keep their blanks")
        #expect(String(decoding: line, as: UTF8.self).contains(#""status_code":200"#))
    }

    @Test func idsAreStableAndDistinct() {
        #expect(BatchOutputLine.requestID(batch: "b", entry: 1) == BatchOutputLine.requestID(batch: "b", entry: 1))
        #expect(BatchOutputLine.requestID(batch: "b", entry: 1) != BatchOutputLine.requestID(batch: "b", entry: 2))
        #expect(BatchOutputLine.requestID(batch: "b1", entry: 1) != BatchOutputLine.requestID(batch: "b", entry: 11))
    }

    @Test func aFailureHasTheStatusAndTheProvidersBody() throws {
        let line = BatchOutputLine.encode(kind: .openai, batch: "b", entry: 0, customID: "x",
                                          result: .failed(code: "http", message: "HTTP 400", status: 400, body: Array(#"{"error": {"message": "bad"}}"#.utf8)))
        let value = try parsed(line)
        #expect(string(value["error"]?["code"], line) == "http")
        #expect(string(value["response"]?["body"]?["error"]?["message"], line) == "bad")
        let text = BatchOutputLine.encode(kind: .openai, batch: "b", entry: 0, customID: "x",
                                          result: .failed(code: "http", message: "m", status: 502, body: Array("<html>\nbad gateway".utf8)))
        #expect(string(try parsed(text)["response"]?["body"], text) == "<html>\nbad gateway", "a body that is not JSON is kept as text")
        let none = BatchOutputLine.encode(kind: .openai, batch: "b", entry: 0, customID: "x",
                                          result: .failed(code: "transport", message: "refused", status: nil, body: nil))
        #expect(try parsed(none)["response"]?.isNull == true)
    }

    @Test func cancelledAndExpiredLines() throws {
        let cancelled = BatchOutputLine.encode(kind: .openai, batch: "b", entry: 0, customID: "x", result: .cancelled)
        #expect(string(try parsed(cancelled)["error"]?["code"], cancelled) == "batch_cancelled")
        let expired = BatchOutputLine.encode(kind: .openai, batch: "b", entry: 0, customID: "x", result: .expired)
        #expect(string(try parsed(expired)["error"]?["code"], expired) == "batch_expired")
        for (result, type) in [(BatchLineResult.cancelled, "canceled"), (.expired, "expired")] {
            let line = BatchOutputLine.encode(kind: .anthropic, batch: "b", entry: 0, customID: "x", result: result)
            #expect(string(try parsed(line)["result"]?["type"], line) == type)
        }
    }

    @Test func anthropicShapes() throws {
        let ok = BatchOutputLine.encode(kind: .anthropic, batch: "b", entry: 0, customID: "x",
                                        result: .succeeded(status: 200, requestID: nil, body: Array(#"{"type": "message", "id": "msg_1"}"#.utf8)))
        let value = try parsed(ok)
        #expect(string(value["result"]?["type"], ok) == "succeeded")
        #expect(string(value["result"]?["message"]?["id"], ok) == "msg_1")
        let own = Array(#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#.utf8)
        let errored = BatchOutputLine.encode(kind: .anthropic, batch: "b", entry: 0, customID: "x", result: .failed(code: "http", message: "m", status: 529, body: own))
        #expect(string(try parsed(errored)["result"]?["error"]?["error"]?["type"], errored) == "overloaded_error")
        let made = BatchOutputLine.encode(kind: .anthropic, batch: "b", entry: 0, customID: "x", result: .failed(code: "transport", message: "refused", status: nil, body: nil))
        #expect(string(try parsed(made)["result"]?["error"]?["error"]?["message"], made) == "refused")
    }

    @Test func theSummaryIsABatchObject() throws {
        var counts = BatchCounts()
        counts.add(code: UInt8(ascii: "s"), inputTokens: 10, outputTokens: 5)
        counts.add(code: UInt8(ascii: "f"), inputTokens: 0, outputTokens: 0)
        counts.add(code: UInt8(ascii: "c"), inputTokens: 0, outputTokens: 0)
        let summary = BatchSummary(name: "b", status: .cancelled, endpoint: "/v1/chat/completions", total: 4, counts: counts,
                                   createdAt: 100, endedAt: 200, inputFile: "outgoing/b.jsonl", outputFile: "incoming/b.jsonl")
        let bytes = summary.encoded()
        let value = try parsed(bytes)
        #expect(string(value["status"], bytes) == "cancelled")
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""request_counts":{"total":4,"completed":1,"failed":2}"#))
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""total_tokens":15"#))
        #expect(value["completed_at"]?.isNull == true)
    }

    @Test func anExpiredSummarySaysWhen() throws {
        let bytes = BatchSummary(name: "b", status: .expired, endpoint: "/v1/chat/completions", total: 1, counts: BatchCounts(),
                                 createdAt: 100, endedAt: 200, inputFile: "i", outputFile: "o").encoded()
        let value = try parsed(bytes)
        #expect(string(value["status"], bytes) == "expired")
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""expired_at":200"#))
        #expect(value["completed_at"]?.isNull == true && value["cancelled_at"]?.isNull == true)
    }

    @Test func tokenTotalsNeverOverflow() {
        var counts = BatchCounts()
        counts.add(code: UInt8(ascii: "s"), inputTokens: Int.max, outputTokens: -5)
        counts.add(code: UInt8(ascii: "s"), inputTokens: Int.max, outputTokens: 1)
        #expect(counts.inputTokens == Int.max)
        #expect(counts.outputTokens == 1)
        _ = BatchSummary(name: "b", status: .completed, endpoint: "/", total: 2, counts: counts, createdAt: 0, endedAt: 0,
                         inputFile: "", outputFile: "").encoded()
    }

    @Test func compactKeepsEscapes() {
        #expect(JSONWriter.compact(Array("{ \"a\" : \"x \\\" y\" ,\n \"b\" : [ 1 , 2 ] }".utf8)) == Array(#"{"a":"x \" y","b":[1,2]}"#.utf8))
        #expect(JSONWriter.quoted("a\u{1}\n\"") == Array(#""a\u0001\n\"""#.utf8))
    }
}
