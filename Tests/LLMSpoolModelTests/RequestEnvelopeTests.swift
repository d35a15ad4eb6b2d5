import Testing
@testable import LLMSpoolModel

/// Every registered url, as the messages list them.
private let supportedURLs = DialectRegistry.urls.joined(separator: ", ")

@Suite struct RequestEnvelopeTests {
    func validate(_ text: String) -> Result<RequestSummary, RequestProblem> {
        RequestValidator.validate(Array(text.utf8))
    }

    func problem(_ text: String) -> RequestProblem? {
        if case .failure(let problem) = validate(text) { return problem }
        return nil
    }

    @Test func envelopeSendsItsBodyOnly() throws {
        let text = #"{"custom_id": "r-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": []}}"#
        let summary = try validate(text).get()
        let bytes = Array(text.utf8)
        #expect(String(decoding: bytes[summary.body], as: UTF8.self) == #"{"model": "m", "messages": []}"#)
        #expect(summary.customID == "r-1")
        #expect(summary.model == "m")
        #expect(summary.size == bytes.count, "the size is the file's, which identity checks compare")
        #expect(summary.completionWindow == nil)
    }

    @Test func spliceIsAtTheBodysBrace() throws {
        let text = #"{"url":"/v1/chat/completions","body":{"model":"m","stream":true,"messages":[]}}"#
        let summary = try validate(text).get()
        let brace = try #require(summary.usageSplice)
        #expect(brace == summary.body.lowerBound)
        #expect(Array(text.utf8)[brace] == UInt8(ascii: "{"))
    }

    @Test func customIDAndMethodAreOptionalForASingleFile() throws {
        let summary = try validate(#"{"url":"/v1/chat/completions","body":{"model":"m","messages":[]},"completion_window":"24h"}"#).get()
        #expect(summary.customID == nil)
        #expect(summary.completionWindow == "24h")
    }

    @Test func bareBodyIsSentWholeButAByteOrderMark() throws {
        let text = #"{"model":"m","messages":[]}"#
        #expect(try validate(text).get().body == 0..<text.utf8.count)
        let marked = [0xEF, 0xBB, 0xBF] + Array(text.utf8)
        #expect(try RequestValidator.validate(marked).get().body == 3..<marked.count)
    }

    @Test(arguments: [
        (#"{"url":"/v1/chat/completions","method":"GET","body":{}}"#, RequestProblem.Kind.unsupported, #""method" must be "POST", not "GET""#, 1, 40),
        (#"{"url":"/v1/nope","body":{}}"#, .unsupported, #""url" "/v1/nope" is not supported; the supported urls are \#(supportedURLs)"#, 1, 8),
        (#"{"url":7,"body":{}}"#, .wrongType, #""url" must be a string (one of \#(supportedURLs)), not a number"#, 1, 8),
        (#"{"body":{"model":"m","messages":[]}}"#, .missingField, #"the envelope has no "url" (one of \#(supportedURLs))"#, nil, nil),
        (#"{"url":"/v1/chat/completions"}"#, .missingField, #"the envelope has no "body""#, nil, nil),
        (#"{"url":"/v1/chat/completions","body":[1]}"#, .wrongType, #""body" must be an object, not an array"#, 1, 38),
        (#"{"url":"/v1/chat/completions","body":{},"custom_id":""}"#, .wrongType, #""custom_id" must not be empty"#, 1, 53),
        (#"{"url":"/v1/chat/completions","body":{},"bdy":1}"#, .unknownMember, #"the envelope has an unknown member "bdy" (an envelope has body, completion_window, custom_id, method, url)"#, 1, 47),
        ("{\"url\":\"/v1/chat/completions\",\n \"body\":{\"model\":\"m\"}}", .missingField, #"the request has no "messages""#, 2, 9),
    ] as [(String, RequestProblem.Kind, String, Int?, Int?)])
    func eachProblemIsNamedWithItsPosition(text: String, kind: RequestProblem.Kind, message: String, line: Int?, column: Int?) throws {
        let found = try #require(problem(text))
        #expect(found.kind == kind)
        // The list of urls grows with every registered dialect.
        #expect(found.message == message.replacingOccurrences(of: "{urls}", with: DialectRegistry.urls.joined(separator: ", ")))
        #expect(found.line == line && found.column == column, "\(found)")
    }

    @Test func aHugeURLIsQuotedShort() throws {
        let url = String(repeating: "x", count: 100_000)
        let found = try #require(problem(#"{"url":""# + url + #"","body":{}}"#))
        #expect(found.message.utf8.count < 400)
    }

    @Test func theBatchFormRequiresACustomID() throws {
        let bytes = Array(#"{"url":"/v1/chat/completions","body":{}}"#.utf8)
        let parsed = try RawJSON.parse(bytes)
        guard case .failure(let found) = RequestEnvelope.read(parsed, in: bytes, urls: DialectRegistry.urls, requireCustomID: true) else {
            Issue.record("a line without custom_id passed")
            return
        }
        #expect(found.message == #"the line has no "custom_id""#)
    }
}
