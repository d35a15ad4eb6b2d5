import Testing
@testable import LLMSpoolModel

@Suite struct AttemptJudgeTests {
    @Test func transportAndDiskFailuresNeedNoBody() {
        var asked = false
        let verdict = AttemptJudge.judgeEnding(.transportError(code: 7, message: "Connection refused")) { asked = true; return [] }
        #expect(verdict == .failure(AttemptFailure(.transport, "Connection refused (curl code 7)", curlCode: 7)))
        #expect(!asked)
        #expect(AttemptJudge.judgeEnding(.cancelled) { [] } == .cancelled)
        #expect(AttemptJudge.judgeEnding(.timedOut(.idle, message: "no content for 2 s")) { [] }
                == .failure(AttemptFailure(.transport, "idle timer fired: no content for 2 s", timer: .idle)))
        guard case .failure(let failure)? = AttemptJudge.judgeEnding(.diskError("write /p: No space left on device (errno 28)"), bodyPrefix: { [] }) else {
            Issue.record("a disk error is a failure")
            return
        }
        #expect(failure.kind == .disk)
    }

    @Test func non2xxKeepsTheProviderBody() {
        let body = Array(#"{"error":{"message":"bad key"}}"#.utf8)
        let verdict = AttemptJudge.judgeEnding(.response(status: 401)) { body }
        #expect(verdict == .failure(AttemptFailure(.http, "the endpoint answered HTTP 401: bad key", httpStatus: 401, providerBody: body)))
        #expect(AttemptJudge.judgeEnding(.response(status: 200)) { [] } == nil)
    }

    @Test func plainAnswersMustBeJSONObjectsWithoutError() {
        #expect(AttemptJudge.judgePlain(status: 200, body: Array(#"{"choices":[]}"#.utf8)) == .success(assembled: nil, usage: nil))
        guard case .failure(let bad) = AttemptJudge.judgePlain(status: 200, body: Array("<html>".utf8)) else {
            Issue.record("HTML is not an answer")
            return
        }
        #expect(bad.kind == .malformedResponse)
        guard case .failure(let error) = AttemptJudge.judgePlain(status: 200, body: Array(#"{"error":{"message":"model loading"}}"#.utf8)) else {
            Issue.record("an error object is not an answer")
            return
        }
        #expect(error.kind == .providerError)
        #expect(error.message == "model loading")
        #expect(AttemptJudge.judgePlain(status: 200, body: Array(#"{"error":null,"choices":[]}"#.utf8)) == .success(assembled: nil, usage: nil))
    }

    /// A JSON object that is no chat completion is not published as one.
    @Test(arguments: [#"{}"#, #"{"choices":"nope"}"#, #"{"choices":null}"#, #"{"id":"x","object":"chat.completion"}"#])
    func aChatAnswerWithoutChoicesIsMalformed(body: String) {
        guard case .failure(let failure) = AttemptJudge.judgePlain(status: 200, body: Array(body.utf8), dialect: ChatCompletionsDialect()) else {
            Issue.record("\(body) is not a chat completion")
            return
        }
        #expect(failure.kind == .malformedResponse)
        #expect(failure.message.contains("\"choices\""))
    }

    @Test func onlyARequestedEventStreamIsParsedAsOne() {
        #expect(AttemptJudge.isEventStream(requested: true, headers: ["content-type": "text/event-stream; charset=utf-8"]))
        #expect(!AttemptJudge.isEventStream(requested: true, headers: ["content-type": "application/json"]))
        #expect(!AttemptJudge.isEventStream(requested: false, headers: ["content-type": "text/event-stream"]))
    }

    @Test func streamVerdictsMapToFailureKinds() {
        let completion = AssembledCompletion(head: [1], content: [2], tail: [3], usage: ["total_tokens": 4])
        #expect(AttemptJudge.judgeStream(status: 200, verdict: .complete(completion)) == .success(assembled: completion, usage: ["total_tokens": 4]))
        #expect(AttemptJudge.judgeStream(status: 200, verdict: .incomplete("cut")) == .failure(AttemptFailure(.incompleteStream, "cut", httpStatus: 200)))
        #expect(AttemptJudge.judgeStream(status: 200, verdict: .malformed("m")) == .failure(AttemptFailure(.malformedResponse, "m", httpStatus: 200)))
    }

    @Test func aRedirectSaysWhereItPointsWithoutItsQueryAndThatItWasNotFollowed() {
        let verdict = AttemptJudge.judgeEnding(.response(status: 308), location: "https://api.example.com/v2/chat?sig=secret\u{1B}[2J") { [] }
        guard case .failure(let failure)? = verdict else {
            Issue.record("a redirect is a failure: \(String(describing: verdict))")
            return
        }
        #expect(failure.message.contains("HTTP 308 (a redirect to https://api.example.com/v2/chat, not followed: set base_url"), "\(failure.message)")
        #expect(!failure.message.contains("sig=") && !failure.message.contains("\u{1B}"))
        guard case .failure(let bare)? = AttemptJudge.judgeEnding(.response(status: 301), bodyPrefix: { [] }) else { return }
        #expect(bare.message.contains("HTTP 301 (a redirect, not followed"), "\(bare.message)")
        guard case .failure(let other)? = AttemptJudge.judgeEnding(.response(status: 404), location: "/x", bodyPrefix: { [] }) else { return }
        #expect(!other.message.contains("redirect"))
    }
}
