import FoundationEssentials
import Testing
@testable import LLMSpoolModel

/// Answers whose shape is wrong are judged by their cause: the endpoint's, not the disk's.
@Suite struct ResponseShapeTests {
    @Test func anEmptyPlainAnswerIsMalformed() {
        guard case .failure(let failure) = AttemptJudge.judgePlain(status: 204, body: []) else {
            Issue.record("an empty answer passed")
            return
        }
        #expect(failure.kind == .malformedResponse)
        #expect(failure.message.contains("empty"))
        #expect(RetryPolicy.isRetryable(failure, headers: [:]))
    }

    /// A plain answer that is not a JSON object says why, where, and names an encoding the
    /// daemon did not ask for (before: only "the answer is not a JSON object (N bytes)").
    @Test func aPlainAnswerThatIsNotAnObjectSaysWhyAndWhere() {
        func message(_ body: String, encoding: String? = nil) -> String {
            guard case .failure(let failure) = AttemptJudge.judgePlain(status: 200, body: Array(body.utf8), contentEncoding: encoding) else {
                Issue.record("\(body) passed")
                return ""
            }
            return failure.message
        }
        let broken = message(#"{"choices": [1e999]}"#)
        #expect(broken.contains("byte"), "the position: \(broken)")
        #expect(message("[1, 2]").contains("it is JSON, but not an object"))
        let gzip = message("\u{1F}\u{8B}binary", encoding: "gzip")
        #expect(gzip.contains("Content-Encoding: gzip"), "\(gzip)")
        #expect(!message("nope", encoding: "identity").contains("Content-Encoding"))
    }

    @Test func aStreamOfOnlyDoneIsMalformed() {
        var assembler = StreamAssembler()
        var parser = SSEParser()
        parser.feed(Array("data: [DONE]\n\n".utf8)) { assembler.consume($0) }
        parser.finish { assembler.consume($0) }
        guard case .malformed(let reason) = assembler.verdict() else {
            Issue.record("a stream without choices was judged \(assembler.verdict())")
            return
        }
        #expect(reason.contains("no choice"))
    }

    @Test func curlOutOfMemoryAfterTheStatusLineIsAGiantHeader() {
        #expect(AttemptEnding.transport(code: 27, message: "Out of memory", responseStarted: true) == .headerTooLarge("Out of memory"))
        #expect(AttemptEnding.transport(code: 27, message: "Out of memory", responseStarted: false)
            == .transportError(code: 27, message: "Out of memory"))
        #expect(AttemptEnding.transport(code: 7, message: "refused", responseStarted: true) == .transportError(code: 7, message: "refused"))
        guard case .failure(let failure)? = AttemptJudge.judgeEnding(.headerTooLarge("x"), bodyPrefix: { [] }) else {
            Issue.record("a giant header was not a failure")
            return
        }
        #expect(failure.kind == .responseTooLarge)
        #expect(!RetryPolicy.isRetryable(failure, headers: [:]))
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\n", HeaderLine.statusLine),
        ("Retry-After:  3 \r\n", .field(name: "retry-after", value: "3")),
        ("X-RateLimit-Reset-Requests:1s\r\n", .field(name: "x-ratelimit-reset-requests", value: "1s")),
        ("\r\n", .other),
        ("  folded continuation\r\n", .other),
        (": no name\r\n", .other),
        ("no colon\r\n", .other),
        ("empty:\r\n", .field(name: "empty", value: "")),
    ])
    func headerLines(line: String, expected: HeaderLine) {
        #expect(HeaderLine.parse(Array(line.utf8)) == expected)
    }

    @Test func aHeaderLineOfInvalidUTF8StillParses() {
        #expect(HeaderLine.parse([0x58, 0x3A, 0xFF, 0xFE, 0x0D, 0x0A]) == .field(name: "x", value: "\u{FFFD}\u{FFFD}"))
    }
}

/// A provider's endpoint-wide pause is bounded like a request's Retry-After.
@Suite struct EndpointPauseTests {
    @Test func aPauseIsCappedByMaxRetryAfter() {
        var gate = EndpointGate(concurrency: 2, maxPauseSeconds: 60, now: 0)
        gate.admit(estimatedTokens: 1, now: 0)
        gate.release(EndpointFeedback(.retryableFailure, pauseSeconds: 100_000), now: 10)
        #expect(gate.pausedUntil == 70)
        #expect(gate.readiness(estimatedTokens: 1, now: 69) == .waitUntil(70))
        #expect(gate.readiness(estimatedTokens: 1, now: 70) == .ready)
    }

    @Test func aShorterPauseIsKeptAndTheLongestWins() {
        var gate = EndpointGate(concurrency: 2, maxPauseSeconds: 60, now: 0)
        gate.release(EndpointFeedback(.answered, pauseSeconds: 5), now: 0)
        #expect(gate.pausedUntil == 5)
        gate.release(EndpointFeedback(.answered, pauseSeconds: 2), now: 1)
        #expect(gate.pausedUntil == 5)
    }

    @Test(arguments: [nil, 0, -1, Double.nan, -Double.infinity]) func noPauseFromNothing(pause: Double?) {
        #expect(EndpointGate.capped(pause, limit: 60) == nil)
    }

    @Test func anInfinitePauseIsTheCap() {
        #expect(EndpointGate.capped(.infinity, limit: 60) == 60)
        #expect(EndpointGate(concurrency: 1, maxPauseSeconds: .infinity, now: 0).maxPauseSeconds == 3600)
    }

    @Test func exhaustedRateLimitHeadersPauseAtMostTheCap() {
        let headers = ["x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "100000s"]
        let feedback = EndpointFeedback.from(.response(status: 200), headers: headers, now: Date(timeIntervalSince1970: 0))
        #expect(feedback.pauseSeconds == 100_000)
        var gate = EndpointGate(concurrency: 1, maxPauseSeconds: 3600, now: 0)
        gate.release(feedback, now: 0)
        #expect(gate.pausedUntil == 3600)
    }
}

/// What a hook gets and what of its output is kept.
@Suite struct HookEnvironmentTests {
    @Test func onlyTheAllowListAndTheTaskPass() {
        let daemon = ["PATH": "/bin", "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC",
                      "OPENAI_API_KEY": "k", "MY_LLM_TOKEN": "k", "LLMSPOOL_CONFIG": "/etc/x", "AWS_SECRET": "k"]
        let built = HookEnvironment.build(daemon: daemon, task: ["LLMSPOOL_ID": "a", "LLMSPOOL_STATUS": "done", "OTHER": "x"])
        #expect(built == ["PATH": "/bin", "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC",
                          "LLMSPOOL_ID": "a", "LLMSPOOL_STATUS": "done"])
    }

    @Test func aPathIsAlwaysSet() {
        #expect(HookEnvironment.build(daemon: [:], task: [:]) == ["PATH": "/usr/local/bin:/usr/bin:/bin"])
    }

    @Test func outputIsBounded() {
        var output = HookOutput()
        output.append([UInt8](repeating: 0x61, count: 4000))
        output.append([UInt8](repeating: 0x62, count: 200))
        #expect(output.kept.count == HookOutput.limit)
        #expect(output.dropped == 104)
        #expect(output.text.hasSuffix("b [104 more bytes not logged]"))
    }
}
