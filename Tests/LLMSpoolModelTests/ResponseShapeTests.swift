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
