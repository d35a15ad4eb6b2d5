import Foundation
import Testing
@testable import LLMSpoolCore
@testable import LLMSpoolStub

/// The stub's Responses, completions and embeddings answers: each stream, folded by the
/// daemon's own assembler for the dialect, is the plain answer; every fault breaks each
/// dialect's stream the way it breaks chat's.
@Suite struct StubDialectTests {
    let responder = StubResponder(defaults: StubDirectives(tokens: 4))

    static var requests: [(path: String, dialect: String, body: [String: Any])] { [
        ("/v1/responses", ResponsesDialect.id, ["model": "m", "input": [["role": "user", "content": [["type": "input_text", "text": "héllo"]]]]]),
        ("/v1/responses", ResponsesDialect.id, ["model": "m", "input": "héllo"]),
        ("/v1/completions", CompletionsDialect.id, ["model": "m", "prompt": "héllo"]),
        ("/v1/completions", CompletionsDialect.id, ["model": "m", "prompt": ["héllo", "other"]]),
    ] }

    func body(_ object: [String: Any]) -> [UInt8] { Array(try! JSONSerialization.data(withJSONObject: object)) }

    func verdict(_ response: StubResponder.Response, _ dialect: String) -> StreamVerdict {
        var parser = SSEParser()
        var assembler = DialectRegistry.dialect(id: dialect)!.makeAssembler()
        response.body.withUnsafeBytes { parser.feedRaw($0) { assembler.consume($0) } }
        parser.finishRaw { assembler.consume($0) }
        return assembler.verdict()
    }

    func streamed(_ object: [String: Any], faults: [[String: Any]] = [], usage: Bool = false) -> [UInt8] {
        var object = object
        object["stream"] = true
        if !faults.isEmpty { object["stub"] = ["faults": faults] }
        if usage { object["stream_options"] = ["include_usage": true] }
        return body(object)
    }

    @Test(arguments: 0..<requests.count)
    func aStreamAssemblesToThePlainAnswer(index: Int) throws {
        let (path, id, request) = Self.requests[index]
        let dialect = try #require(DialectRegistry.dialect(id: id))
        let plain = responder.respond(method: "POST", path: path, body: body(request))
        #expect(plain.status == 200)
        guard case .success = AttemptJudge.judgePlain(status: 200, body: plain.body, dialect: dialect) else {
            Issue.record("the plain answer is not the dialect's object: \(String(decoding: plain.body, as: UTF8.self))")
            return
        }
        let expected = StubAnswer.content(prompt: "héllo", tokens: 4)
        #expect(dialect.answerText(ofResult: plain.body) == expected)
        let stream = responder.respond(method: "POST", path: path, body: streamed(request, usage: id == CompletionsDialect.id))
        #expect(stream.headers.contains { $0 == ("Content-Type", "text/event-stream") })
        guard case .complete(let result) = verdict(stream, id) else {
            Issue.record("the stream is not complete: \(verdict(stream, id))")
            return
        }
        #expect(dialect.answerText(ofResult: result.document) == expected)
        #expect(UsageNames.normalised(result.usage ?? [:])["output"] == 4, "the stream carries its usage")
        // What a live view shows is the whole text, event by event.
        var parser = SSEParser()
        var shown = ""
        parser.feed(stream.body) { event in
            if case .data(let text) = event { shown += dialect.textDelta(ofEvent: Array(text.utf8)) ?? "" }
        }
        #expect(shown == expected)
    }

    @Test func responsesEventsComeInTheAPIsOrderWithSequenceNumbers() throws {
        let stream = responder.respond(method: "POST", path: "/v1/responses", body: streamed(Self.requests[1].body))
        let text = String(decoding: stream.body, as: UTF8.self)
        let names = text.split(separator: "\n").filter { $0.hasPrefix("event: ") }.map { String($0.dropFirst(7)) }
        #expect(names == ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
            + Array(repeating: "response.output_text.delta", count: 4)
            + ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"])
        var numbers: [Int] = []
        var parser = SSEParser()
        parser.feed(stream.body) { event in
            if case .data(let data) = event, let object = JSONObject.parse(Array(data.utf8)) { numbers.append(object["sequence_number"] as? Int ?? -1) }
        }
        #expect(numbers == Array(0..<12))
    }

    @Test(arguments: [ResponsesDialect.id, CompletionsDialect.id])
    func faultsBreakEachDialectsStream(id: String) throws {
        let (path, _, request) = Self.requests.first { $0.dialect == id }!
        let cut = responder.respond(method: "POST", path: path, body: streamed(request, faults: [["cut_after": 3]]))
        #expect(cut.abortAtEnd && cut.pieces.count == 3)
        guard case .incomplete = verdict(cut, id) else { Issue.record("a cut stream must be incomplete"); return }
        let truncated = responder.respond(method: "POST", path: path, body: streamed(request, faults: [["truncate_after": 3]]))
        guard case .incomplete = verdict(truncated, id) else { Issue.record("a truncated stream must be incomplete"); return }
        let erroring = responder.respond(method: "POST", path: path, body: streamed(request, faults: [["error_in_stream": true]]))
        guard case .providerError(let message, let errorBody) = verdict(erroring, id) else {
            Issue.record("an error event must be a provider error: \(verdict(erroring, id))")
            return
        }
        #expect(message.contains("inside the stream"))
        let failure = DialectRegistry.dialect(id: id)!.streamFailure(message: message, body: errorBody, status: 200)
        #expect(RetryPolicy.isRetryable(failure, headers: [:]), "the stub's in-stream error is a server error")
        let stalled = responder.respond(method: "POST", path: path, body: streamed(request, faults: [["stall_ms": 1000, "keepalive_ms": 250]]))
        #expect(stalled.pieces.filter { $0.bytes.first == UInt8(ascii: ":") }.count == 4)
        guard case .complete = verdict(stalled, id) else { Issue.record("a stall ends in a whole answer"); return }
        let doneOnly = responder.respond(method: "POST", path: path, body: streamed(request, faults: [["done_only": true]]))
        guard case .malformed = verdict(doneOnly, id) else { Issue.record("a stream of only [DONE] is no answer: \(verdict(doneOnly, id))"); return }
        let refused = responder.respond(method: "POST", path: path, body: streamed(request, faults: [["status": 503]]))
        #expect(refused.status == 503)
    }

    @Test func embeddingsAreAPlainListWhateverTheRequestSays() throws {
        let dialect = try #require(DialectRegistry.dialect(id: EmbeddingsDialect.id))
        for request in [["model": "e", "input": ["a", "b", "c"], "dimensions": 5], ["model": "e", "input": ["a", "b", "c"], "dimensions": 5, "stream": true]] as [[String: Any]] {
            let answer = responder.respond(method: "POST", path: "/v1/embeddings", body: body(request))
            #expect(answer.headers.contains { $0 == ("Content-Type", "application/json") })
            guard case .success(_, let usage) = AttemptJudge.judgePlain(status: 200, body: answer.body, dialect: dialect) else {
                Issue.record("not an embedding list")
                return
            }
            #expect(usage?["input"] != nil)
            #expect(EmbeddingsDialect.summary(ofResult: answer.body) == "3 embeddings of 5 dimensions")
        }
        let one = responder.respond(method: "POST", path: "/v1/embeddings", body: body(["model": "e", "input": "a"]))
        let again = responder.respond(method: "POST", path: "/v1/embeddings", body: body(["model": "e", "input": "a"]))
        #expect(one.body == again.body, "the vectors are deterministic")
    }
}
