import Testing
@testable import LLMSpoolModel

@Suite struct BatchValidatorTests {
    static func chat(_ id: String, url: String = "/v1/chat/completions", body: String = #"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#) -> String {
        #"{"custom_id":"\#(id)","method":"POST","url":"\#(url)","body":\#(body)}"#
    }

    /// Validates `text` as the daemon reads it: split at newlines, earlier ids re-read from the text.
    func validate(_ text: String, limits: BatchValidator.Limits = .init(), dialects: [any Dialect] = DialectRegistry.all,
                  rereads: inout Int) -> BatchValidator {
        let bytes = Array(text.utf8)
        var validator = BatchValidator(fileSize: bytes.count, limits: limits, dialects: dialects)
        var start = 0
        var number = 1
        var count = 0
        while start <= bytes.count && !validator.stopped {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            if end > start || end < bytes.count {
                validator.add(Array(bytes[start..<end]), number: number, offset: start) { range in
                    count += 1
                    guard case .success(let parsed) = BatchLine.read(Array(bytes[range]), at: range.lowerBound, fileSize: bytes.count) else { return nil }
                    return parsed.customID
                }
            }
            start = end + 1
            number += 1
        }
        rereads = count
        return validator
    }

    func validate(_ text: String, limits: BatchValidator.Limits = .init()) -> BatchValidator {
        var rereads = 0
        return validate(text, limits: limits, rereads: &rereads)
    }

    /// The ids the list of custom_ids is written from: one per entry of a valid file, none
    /// for a blank line or a line refused.
    @Test func eachValidLineGivesItsCustomIDInEntryOrder() {
        var validator = BatchValidator(fileSize: 1000)
        let lines = [Self.chat("first"), "  ", Self.chat(#"se\"cond"#), #"{"custom_id":"bad"}"#]
        var offset = 0
        let ids = lines.enumerated().map { number, line -> String? in
            defer { offset += line.utf8.count + 1 }
            return validator.add(Array(line.utf8), number: number + 1, offset: offset) { _ in nil }
        }
        #expect(ids == ["first", nil, #"se"cond"#, nil])
        #expect(validator.index.count == 3, "the refused line has an entry; its file is invalid")
        #expect(!validator.isValid)
    }

    @Test func aValidFileIsIndexedAndEachBodyIsTheFilesBytes() throws {
        let text = [Self.chat("a"), "", Self.chat("b", body: #"{"model":"m","stream":true,"messages":[]}"#)].joined(separator: "\n") + "\n"
        let validator = validate(text)
        #expect(validator.isValid)
        #expect(validator.kind == .openai)
        #expect(validator.firstURL == "/v1/chat/completions")
        #expect(validator.index.count == 2, "a blank line has no entry")
        #expect(validator.index.lineNumber(1) == 3)
        let bytes = Array(text.utf8)
        let second = Array(bytes[validator.index.range(1)])
        let line = try BatchLine.read(second, at: validator.index.starts[1], fileSize: bytes.count).get()
        #expect(String(decoding: bytes[line.summary.body], as: UTF8.self) == #"{"model":"m","stream":true,"messages":[]}"#)
        #expect(line.summary.size == bytes.count, "the identity checks compare the file's size")
        #expect(line.summary.usageSplice == line.summary.body.lowerBound, "the splice offset is the file's")
        #expect(line.customID == "b")
    }

    /// The index gives every later read its range: line 1's starts after the mark, so the
    /// line read again and the body sent from it have no mark.
    @Test func aByteOrderMarkOpeningTheFileIsNotPartOfTheFirstLine() throws {
        let mark = "\u{FEFF}"
        let text = mark + [Self.chat("a"), Self.chat("b")].joined(separator: "\n") + "\n"
        let validator = validate(text)
        #expect(validator.isValid, "\(validator.problems)")
        #expect(validator.index.range(0) == 3..<(3 + Self.chat("a").utf8.count))
        let bytes = Array(text.utf8)
        let first = Array(bytes[validator.index.range(0)])
        let line = try BatchLine.read(first, at: validator.index.starts[0], fileSize: bytes.count).get()
        #expect(line.customID == "a")
        #expect(String(decoding: bytes[line.summary.body], as: UTF8.self) == #"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#)

        #expect(!validate(Self.chat("a") + "\n" + mark + Self.chat("b")).isValid, "only the file's first bytes may be a mark")
        #expect(!validate(mark + mark + Self.chat("a")).isValid, "one mark, not two")
        #expect(!validate(mark + "\n").isValid, "a mark alone is a file without lines")
    }

    @Test func eachProblemHasItsLineNumberAndTheFirstHundredAreKept() {
        var lines: [String] = []
        for index in 0..<150 { lines.append(index == 0 ? Self.chat("ok") : "{not json \(index)") }
        let validator = validate(lines.joined(separator: "\n"))
        #expect(!validator.isValid)
        #expect(validator.problemCount == 149)
        #expect(validator.problems.count == BatchValidator.problemLimit)
        #expect(validator.problems.first?.line == 2)
        #expect(validator.problems.first?.problem.kind == .invalidJSON)
        #expect(validator.problems.first?.description.hasPrefix("line 2, column 2: the line is not valid JSON") == true)
    }

    @Test(arguments: [
        (#"{"custom_id":"a","url":"/v1/chat/completions","body":{"model":"m"}}"#, RequestProblem.Kind.missingField, #"the request has no "messages""#),
        (#"{"url":"/v1/chat/completions","body":{"model":"m","messages":[]}}"#, .missingField, #"the line has no "custom_id""#),
        (#"{"custom_id":"a","url":"/v1/nope","body":{}}"#, .unsupported, #""url" "/v1/nope" is not supported; the supported urls are \#(DialectRegistry.urls.joined(separator: ", "))"#),
        (#"[1,2]"#, .notAnObject, "the line must be a JSON object, not an array"),
        (#"{"custom_id":"a","params":{"model":"m","max_tokens":5,"messages":[]},"x":1}"#, .unknownMember,
         #"the line has an unknown member "x" (an Anthropic batch line has custom_id, params)"#),
    ] as [(String, RequestProblem.Kind, String)])
    func aBadLineIsNamed(line: String, kind: RequestProblem.Kind, message: String) throws {
        let validator = validate(Self.chat("first") + "\n" + line)
        let problem = try #require(validator.problems.first)
        #expect(problem.line == 2)
        #expect(problem.problem.kind == kind)
        #expect(problem.problem.message == message)
    }

    @Test func aDuplicateCustomIDNamesTheEarlierLine() {
        var rereads = 0
        let validator = validate([Self.chat("a"), Self.chat("b"), Self.chat("a")].joined(separator: "\n"), rereads: &rereads)
        #expect(validator.problemCount == 1)
        #expect(validator.problems.first?.line == 3)
        #expect(validator.problems.first?.problem.message == #""custom_id" "a" is also that of line 1; each line needs its own"#)
        #expect(rereads == 1, "only a fingerprint seen before costs a re-read")
    }

    @Test func uniqueIDsCostNoReread() {
        var rereads = 0
        let validator = validate((0..<2000).map { Self.chat("id-\($0)") }.joined(separator: "\n"), rereads: &rereads)
        #expect(validator.isValid)
        #expect(rereads == 0)
    }

    @Test func oneKindPerFile() throws {
        let anthropic = #"{"custom_id":"x","params":{"model":"m","max_tokens":5,"messages":[]}}"#
        let validator = validate(Self.chat("a") + "\n" + anthropic)
        let problem = try #require(validator.problems.first)
        #expect(problem.line == 2)
        // Without the Messages dialect an Anthropic line is unsupported; with it, of the wrong kind.
        #expect(problem.problem.kind == .unsupported)
    }

    @Test(.enabled(if: DialectRegistry.dialect(url: "/v1/messages") != nil))
    func anAnthropicFileIsValidWithTheMessagesDialect() throws {
        let text = #"{"custom_id":"x","params":{"model":"anthropic","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}"#
        let validator = validate(text)
        #expect(validator.isValid)
        #expect(validator.kind == .anthropic)
        #expect(validator.firstURL == "/v1/messages")
    }

    @Test func anAnthropicLineIsRefusedWithoutTheMessagesDialect() throws {
        let text = #"{"custom_id":"x","params":{"model":"anthropic","max_tokens":5,"messages":[]}}"#
        var rereads = 0
        let validator = validate(text, dialects: [ChatCompletionsDialect()], rereads: &rereads)
        let problem = try #require(validator.problems.first)
        #expect(problem.problem.kind == .unsupported)
        #expect(problem.problem.message == "Anthropic batch lines need the Messages dialect (/v1/messages), which this daemon does not have")
    }

    @Test func limitsOfLinesAndBytes() throws {
        let text = (0..<5).map { Self.chat("id-\($0)") }.joined(separator: "\n")
        let lines = validate(text, limits: .init(maxLines: 3))
        #expect(lines.problems.map(\.line) == [4])
        #expect(lines.problems.first?.problem.message == "the batch file has more than max_batch_lines (3) lines")
        #expect(lines.stopped)
        let bytes = validate(text, limits: .init(maxBytes: 100))
        #expect(bytes.problems.first?.line == nil)
        #expect(bytes.problems.first?.problem.kind == .tooLarge)
        #expect(bytes.index.count == 0, "a file over the limit is not read")
    }

    @Test func anEmptyFileHasAProblem() {
        let validator = validate("\n\n")
        #expect(!validator.isValid)
        #expect(validator.firstProblem?.problem.message == "the batch file has no lines")
    }
}
