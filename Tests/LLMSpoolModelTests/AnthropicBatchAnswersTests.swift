import Testing
@testable import LLMSpoolModel

/// Anthropic's Message Batches answers as the docs show them, and what the network may send instead.
@Suite struct AnthropicBatchAnswersTests {
    @Test func customIDsCarryTheGroupAndOnlyTheGroupsAreRead() {
        let id = AnthropicBatchAnswers.customID(group: "g00000000000000ab", index: 17)
        #expect(id == "g00000000000000ab-17")
        #expect(id.utf8.count <= 64 && id.utf8.allSatisfy { $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        #expect(AnthropicBatchAnswers.memberIndex(customID: id, group: "g00000000000000ab") == 17)
        #expect(AnthropicBatchAnswers.memberIndex(customID: "g00000000000000ab-0", group: "g00000000000000ab") == 0)
        for other in ["g00000000000000ac-17", "g00000000000000ab-", "g00000000000000ab-017", "g00000000000000ab-1x",
                      "g00000000000000ab-99999999999", "g00000000000000ab-+1", "g00000000000000ab17", "my-first-request"] {
            #expect(AnthropicBatchAnswers.memberIndex(customID: other, group: "g00000000000000ab") == nil, "\(other)")
        }
    }

    @Test func theCreateBodyFramesEachMessagesBodyInPlace() throws {
        let bodies = [#"{"model":"m","max_tokens":5,"messages":[]}"#, #"{"model":"n","max_tokens":6,"messages":[]}"#]
        var body = AnthropicBatchAnswers.head
        for (index, text) in bodies.enumerated() {
            body += AnthropicBatchAnswers.memberPrefix(customID: AnthropicBatchAnswers.customID(group: "g1", index: index), first: index == 0)
                + Array(text.utf8) + AnthropicBatchAnswers.memberSuffix
        }
        body += AnthropicBatchAnswers.tail
        let root = try RawJSON.parse(body)
        guard case .array(let requests, _)? = root["requests"] else {
            Issue.record("no requests array")
            return
        }
        #expect(requests.count == 2)
        #expect(requests[1]["custom_id"].flatMap { RawJSON.string($0, in: body) } == "g1-1")
        #expect(requests[0]["params"].map { Array(body[$0.range]) } == Array(bodies[0].utf8))
    }

    @Test func aMessageBatchReadsAsTheLanesStatus() throws {
        let running = Array(#"""
            {"id":"msgbatch_013Zva2CMHLNnXjNJJKqJ2EF","type":"message_batch","processing_status":"in_progress",
             "request_counts":{"processing":2,"succeeded":0,"errored":0,"canceled":0,"expired":0},"ended_at":null,
             "created_at":"2024-09-24T18:37:24.100435Z","expires_at":"2024-09-25T18:37:24.100435Z","cancel_initiated_at":null,"results_url":null}
            """#.utf8)
        #expect(try AnthropicBatchAnswers.status(running) == RemoteBatchStatus(status: "in_progress", total: 2))
        let ended = Array(#"""
            {"id":"msgbatch_1","processing_status":"ended","request_counts":{"processing":0,"succeeded":50,"errored":30,"canceled":0,"expired":0},
             "cancel_initiated_at":null,"results_url":"https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"}
            """#.utf8)
        let status = try AnthropicBatchAnswers.status(ended)
        #expect(status == RemoteBatchStatus(status: "completed", total: 80, completed: 50, failed: 30,
                                            outputFileID: "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"))
        #expect(status.hasEnded)
        let expired = Array(#"{"processing_status":"ended","request_counts":{"succeeded":1,"expired":3},"results_url":"u"}"#.utf8)
        #expect(try AnthropicBatchAnswers.status(expired).status == "expired")
        let cancelled = Array(#"{"processing_status":"ended","request_counts":{"canceled":3,"expired":1},"cancel_initiated_at":"2024-08-20T18:37:24Z","results_url":"u"}"#.utf8)
        #expect(try AnthropicBatchAnswers.status(cancelled).status == "cancelled")
        let canceling = Array(#"{"processing_status":"canceling","request_counts":{"processing":3},"results_url":"early"}"#.utf8)
        #expect(try AnthropicBatchAnswers.status(canceling) == RemoteBatchStatus(status: "cancelling", total: 3), "no results before the end")
    }

    @Test func hostileCountsAndShapesNeitherTrapNorPass() {
        let huge = Array(#"{"processing_status":"in_progress","request_counts":{"processing":99999999999999999999999,"succeeded":9223372036854775807,"errored":9223372036854775807}}"#.utf8)
        #expect((try? AnthropicBatchAnswers.status(huge))?.total == Int.max, "sums saturate, an unreadable count is none")
        #expect(throws: AnthropicBatchAnswers.Problem(description: "the message batch has no processing_status")) {
            try AnthropicBatchAnswers.status(Array(#"{"id":"x"}"#.utf8))
        }
        #expect(throws: AnthropicBatchAnswers.Problem(description: "not a JSON object")) { try AnthropicBatchAnswers.status(Array("[]".utf8)) }
        #expect(throws: AnthropicBatchAnswers.Problem.self) { try AnthropicBatchAnswers.status(Array("{".utf8)) }
    }

    @Test func eachResultTypeBecomesTheMembersOutcome() throws {
        let message = #"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"model":"m","stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}"#
        let succeeded = Array(#"{"custom_id":"g1-0","result":{"type":"succeeded","message":\#(message)}}"#.utf8)
        #expect(try AnthropicBatchAnswers.resultLine(succeeded) == ("g1-0", .succeeded(status: 200, requestID: nil, body: Array(message.utf8))))
        let error = #"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#
        let errored = Array(#"{"custom_id":"g1-1","result":{"type":"errored","error":\#(error)}}"#.utf8)
        #expect(try AnthropicBatchAnswers.resultLine(errored)
                == ("g1-1", .failed(code: "invalid_request_error", message: "max_tokens: too large", status: 400, body: Array(error.utf8))))
        let overloaded = Array(#"{"custom_id":"g1-2","result":{"type":"errored","error":{"type":"error","error":{"type":"overloaded_error","message":"busy"}}}}"#.utf8)
        #expect(try AnthropicBatchAnswers.resultLine(overloaded).result.succeeded == false)
        if case .failed(_, _, let status, _) = try AnthropicBatchAnswers.resultLine(overloaded).result { #expect(status == 529) }
        #expect(try AnthropicBatchAnswers.resultLine(Array(#"{"custom_id":"g1-3","result":{"type":"canceled"}}"#.utf8)).result == .cancelled)
        #expect(try AnthropicBatchAnswers.resultLine(Array(#"{"custom_id":"g1-4","result":{"type":"expired"}}"#.utf8)).result == .expired)
        #expect(AnthropicBatchAnswers.status(ofErrorType: "rate_limit_error") == 429 && AnthropicBatchAnswers.status(ofErrorType: "new_kind") == 500)
    }

    /// Every error type the live lane knows maps to the status a live call answers with,
    /// in a batch's result as in a stream: a `timeout_error` is a 504 (retried), never a 500.
    @Test func anErroredLineMapsToTheStatusTheLiveLaneGivesTheSameError() throws {
        let live: [(String, Int)] = [("invalid_request_error", 400), ("authentication_error", 401), ("billing_error", 402),
                                     ("permission_error", 403), ("not_found_error", 404), ("request_too_large", 413),
                                     ("rate_limit_error", 429), ("api_error", 500), ("timeout_error", 504), ("overloaded_error", 529)]
        for (type, status) in live {
            #expect(MessagesDialect.status(ofErrorType: type) == status, "the live table: \(type)")
            #expect(AnthropicBatchAnswers.status(ofErrorType: type) == status, "the batch lane: \(type)")
            let body = #"{"type":"error","error":{"type":"\#(type)","message":"m"}}"#
            let line = Array(#"{"custom_id":"g1-0","result":{"type":"errored","error":\#(body)}}"#.utf8)
            #expect(try AnthropicBatchAnswers.resultLine(line).result == .failed(code: type, message: "m", status: status, body: Array(body.utf8)))
            // What a live stream's in-stream error of the same type amounts to.
            let failure = MessagesDialect().streamFailure(message: "m", body: Array(body.utf8), status: 200)
            #expect(failure.embeddedCode == status, "\(type) in a stream")
        }
        let timedOut = Array(#"{"custom_id":"g1-0","result":{"type":"errored","error":{"type":"error","error":{"type":"timeout_error","message":"slow"}}}}"#.utf8)
        let verdict = LaneMemberVerdict.decide(line: try AnthropicBatchAnswers.resultLine(timedOut).result, batchStatus: "completed", batch: "msgbatch_1")
        guard case .response(let status, _, _) = verdict else {
            Issue.record("a timeout_error line is an answer with a status: \(verdict)")
            return
        }
        #expect(status == 504)
        // Types neither table knows are server errors in the batch lane (retried live).
        for unknown in ["new_kind", "", "timeout"] {
            #expect(AnthropicBatchAnswers.status(ofErrorType: unknown) == 500, "\(unknown)")
        }
    }

    @Test func unreadableResultLinesAreNamed() {
        let cases: [(String, String)] = [
            (#"{"result":{"type":"expired"}}"#, "no custom_id"),
            (#"{"custom_id":"g1-0"}"#, "g1-0: no result type"),
            (#"{"custom_id":"g1-0","result":{"type":"succeeded","message":"text"}}"#, "g1-0: a success without a message"),
            (#"{"custom_id":"g1-0","result":{"type":"later"}}"#, #"g1-0: an unknown result type "later""#),
            ("7", "not a JSON object"),
        ]
        for (text, problem) in cases {
            #expect(throws: AnthropicBatchAnswers.Problem(description: problem)) { try AnthropicBatchAnswers.resultLine(Array(text.utf8)) }
        }
    }

    @Test func aListPageReadsIdsAndCreationTimesAndNoGroup() throws {
        let page = Array(#"""
        {"data":[{"id":"msgbatch_b","type":"message_batch","created_at":"2026-12-01T23:00:10Z"},
        {"id":"msgbatch_a","created_at":"not a time"},{"created_at":"2026-12-01T23:00:00Z"},
        {"id":"msgbatch_c","created_at":"99999-12-01T23:00:00Z"}],"has_more":true,"first_id":"msgbatch_b","last_id":"msgbatch_c"}
        """#.utf8)
        let listing = try AnthropicBatchAnswers.listing(page)
        #expect(listing.hasMore)
        #expect(listing.entries.map(\.id) == ["msgbatch_b", "msgbatch_a", "msgbatch_c"], "an entry without an id is left out")
        #expect(listing.entries.map(\.group) == [nil, nil, nil], "a Message Batch carries no group id")
        #expect(listing.entries[0].createdAt == 1_796_166_010)
        #expect(listing.entries[1].createdAt == 0 && listing.entries[2].createdAt == 0)
        #expect(try AnthropicBatchAnswers.listing(Array(#"{"data":[]}"#.utf8)) == RemoteBatchListing(entries: [], hasMore: false))
        for bad in [#"{"data":{}}"#, "[]", "", #"{"has_more":true}"#] {
            #expect(throws: AnthropicBatchAnswers.Problem.self) { try AnthropicBatchAnswers.listing(Array(bad.utf8)) }
        }
    }

    @Test func aCreatedBatchsIdAndAnErrorsMessageAreRead() throws {
        #expect(try AnthropicBatchAnswers.id(Array(#"{"id":"msgbatch_01","type":"message_batch"}"#.utf8)) == "msgbatch_01")
        for bad in [#"{"id":""}"#, #"{"id":7}"#, #"{"type":"message_batch"}"#, "[", ""] {
            #expect(throws: AnthropicBatchAnswers.Problem.self) { try AnthropicBatchAnswers.id(Array(bad.utf8)) }
        }
        #expect(AnthropicBatchAnswers.errorMessage(Array(#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#.utf8)) == "slow down")
        #expect(AnthropicBatchAnswers.errorMessage(Array("<html>".utf8)) == nil)
        #expect(AnthropicBatchAnswers.errorMessage(Array(#"{"error":"x"}"#.utf8)) == nil)
    }

    @Test func aListedBatchGivesItsSizeAndWhetherItEnded() throws {
        let page = Array(#"""
            {"data":[{"id":"a","processing_status":"ended","created_at":"2026-12-01T00:00:00Z",
                      "request_counts":{"processing":0,"succeeded":2,"errored":1,"canceled":0,"expired":0}},
                     {"id":"b","processing_status":"in_progress","request_counts":{"processing":3,"succeeded":0,"errored":0,"canceled":0,"expired":0}},
                     {"id":"c","processing_status":"ended","request_counts":{"processing":0,"succeeded":1}},
                     {"id":"d","processing_status":"ended","request_counts":{"processing":-5,"succeeded":1,"errored":0,"canceled":0,"expired":0}},
                     {"id":"e","processing_status":"ended","request_counts":{"processing":9223372036854775807,"succeeded":9223372036854775807,"errored":0,"canceled":0,"expired":99999999999999999999999}}],
             "has_more":false}
            """#.utf8)
        let listing = try AnthropicBatchAnswers.listing(page)
        #expect(listing.entries.map(\.total) == [3, 3, nil, nil, nil], "missing, negative or unreadable counts rule nothing out")
        #expect(listing.entries.map(\.ended) == [true, false, true, true, true])
        let saturated = Array(#"{"data":[{"id":"f","request_counts":{"processing":9223372036854775807,"succeeded":9223372036854775807,"errored":0,"canceled":0,"expired":0}}]}"#.utf8)
        #expect(try AnthropicBatchAnswers.listing(saturated).entries.first?.total == Int.max, "absurd counts saturate, never trap")
    }

    @Test func aResultsLineIsItsMembersOutcomeOrANamedRefusal() throws {
        let members = ["first", "second"]
        let ok = Array(#"{"custom_id":"g1-1","result":{"type":"succeeded","message":{"type":"message","content":[]}}}"#.utf8)
        let read = try AnthropicBatchAnswers.memberLine(ok, group: "g1", members: members)
        #expect(read.member == "second")
        #expect(read.result == .succeeded(status: 200, requestID: nil, body: Array(#"{"type":"message","content":[]}"#.utf8)))
        let cases: [(String, String)] = [
            (#"{"custom_id":"g2-0","result":{"type":"canceled"}}"#, #"the custom_id "g2-0" (of group g2) is not one of group g1's"#),
            (#"{"custom_id":"stranger","result":{"type":"canceled"}}"#, #"the custom_id "stranger" is not one of group g1's"#),
            (#"{"custom_id":"g1-2","result":{"type":"canceled"}}"#, "the custom_id g1-2 names no member: the group has 2"),
            (#"{"custom_id":"g1-0","result":{"ty"#, "not JSON"),
        ]
        for (line, problem) in cases {
            let error = #expect(throws: AnthropicBatchAnswers.Problem.self) { try AnthropicBatchAnswers.memberLine(Array(line.utf8), group: "g1", members: members) }
            #expect(error?.description.contains(problem) == true, "\(line): \(error?.description ?? "")")
        }
    }

    @Test func theFirstResultsLineNamesItsGroup() {
        #expect(AnthropicBatchAnswers.group(ofFirstResultLine: Array(#"{"custom_id":"g00ab-12","result":{"type":"expired"}}"#.utf8)) == "g00ab")
        #expect(AnthropicBatchAnswers.group(ofFirstResultLine: Array(#"{"custom_id":"nodash","result":{}}"#.utf8)) == nil)
        #expect(AnthropicBatchAnswers.group(ofFirstResultLine: Array(#"{"custom_id":"-7"}"#.utf8)) == nil)
        #expect(AnthropicBatchAnswers.group(ofFirstResultLine: Array(#"{"custom_id":"g1-0","result":{"ty"#.utf8)) == nil, "a line cut short names none")
        #expect(AnthropicBatchAnswers.group(ofFirstResultLine: []) == nil)
    }
}
