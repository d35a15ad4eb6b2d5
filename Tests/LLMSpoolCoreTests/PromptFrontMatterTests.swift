import Foundation
import LLMSpoolCore
import LLMSpoolModel
import Testing

/// Prompt files read with the daemon's own YAML reader (libyaml).
@Suite struct PromptFrontMatterTests {
    func parse(_ text: String) -> Result<PromptFile, RequestProblem> {
        PromptFile.parse(Array(text.utf8), yaml: LibYAML.reader)
    }

    @Test func libyamlGivesATreeWithPositionsAndQuoting() throws {
        let tree = try #require(try LibYAML.parse(Array("model: gpt-4o\nparams:\n  stop: [\"a\", b]\n".utf8)).get())
        guard case .mapping(let pairs, 1, 1) = tree else { Issue.record("\(tree)"); return }
        #expect(pairs.count == 2)
        #expect(pairs[0].key == .scalar("model", quoted: false, line: 1, column: 1))
        #expect(pairs[0].value == .scalar("gpt-4o", quoted: false, line: 1, column: 8))
        guard case .mapping(let inner, 3, 3) = pairs[1].value, case .sequence(let items, 3, 9) = inner[0].value else {
            Issue.record("\(pairs[1].value)"); return
        }
        #expect(items == [.scalar("a", quoted: true, line: 3, column: 10), .scalar("b", quoted: false, line: 3, column: 15)])
        #expect(try LibYAML.parse([]).get() == nil)
        #expect(try LibYAML.parse(Array("# only a comment\n".utf8)).get() == nil)
    }

    @Test func aFullPromptFileIsRead() throws {
        let text = """
        ---
        model: gpt-4o-mini
        system: |
          Be brief.
          Use metric units.
        temperature: 0.2
        max_tokens: 200
        stream: false
        params:
          top_p: 0.9
          seed: 42
          response_format: {type: text}
          stop: ["END", 3]
          tag: "007"
        ---
        ## user
        How far is the moon?
        """
        let file = try parse(text).get()
        #expect(file.settings.model == "gpt-4o-mini")
        #expect(file.settings.system == "Be brief.\nUse metric units.\n")
        #expect(file.settings.temperature == .number("0.2"))
        #expect(file.settings.maxTokens == 200)
        #expect(!file.settings.stream)
        let body = String(decoding: try PromptBody.make(file, defaultModel: nil).get().body.encoded(), as: UTF8.self)
        #expect(body.hasSuffix(#""stream":false,"temperature":0.2,"max_tokens":200,"top_p":0.9,"seed":42,"response_format":{"type":"text"},"stop":["END",3],"tag":"007"}"#),
                "YAML scalars become JSON numbers, booleans and strings: \(body)")
    }

    @Test(arguments: [
        // (file, line, column, words of the message)
        ("---\nmodel: [gpt\n---\nHi", 3, 1, "not valid YAML"),
        ("---\nmodel: m\n\tstream: true\n---\nHi", 3, 1, "not valid YAML"),
        ("---\nmodel: m\nmodle: n\n---\nHi", 3, 1, "unknown front matter key \"modle\""),
        ("---\nmodel: m\ntemperature: warm\n---\nHi", 3, 14, "\"temperature\" must be a number"),
        ("---\nmax_tokens: -5\n---\nHi", 2, 13, "\"max_tokens\" must be a whole number above 0"),
        ("---\nstream: maybe\n---\nHi", 2, 9, "\"stream\" must be true or false"),
        ("---\napi: completions\n---\nHi", 2, 6, "\"api\" must be one of chat, responses, messages"),
        ("---\nparams: [1, 2]\n---\nHi", 2, 9, "\"params\" must be a mapping"),
        ("---\nmodel: a\nmodel: b\n---\nHi", 3, 1, "twice"),
        ("---\n- model\n---\nHi", 2, 1, "must be a mapping"),
        ("---\nmodel: m\nparams:\n  model: x\n---\nHi", 4, 3, "params must not set \"model\""),
        ("---\nmodel: m\n", 1, 1, "never closed"),
        ("---\nmodel: \"m\n---\nHi", 3, 1, "not valid YAML"),
    ])
    func eachFrontMatterErrorNamesItsPosition(text: String, line: Int, column: Int, words: String) {
        let result = parse(text).flatMap { file in PromptBody.make(file, defaultModel: "d").map { _ in file } }
        guard case .failure(let problem) = result else { Issue.record("accepted \(text.debugDescription)"); return }
        #expect(problem.message.contains(words), "\(text.debugDescription): \(problem)")
        #expect(problem.line == line && problem.column == column, "\(text.debugDescription): \(problem)")
    }

    /// Found by the fuzzer: a line holding only a carriage return was a user message, which
    /// its transcript (written with `\n`) turned into an empty section that did not read back.
    @Test func aLoneCarriageReturnIsBlankAndTheFuzzersFindingReadsBack() throws {
        let finding = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fuzz/regressions/prompt/lone-carriage-return").path
        let bytes = try FileReader.prefix(path: finding, limit: 1 << 16)
        #expect(bytes == [0x0D, 0x0A, 0x0D, 0x0D])
        guard case .failure(let problem) = PromptFile.parse(bytes, yaml: LibYAML.reader) else { Issue.record("accepted a blank prompt"); return }
        #expect(problem.kind == .invalidPrompt)
        let file = try parse("\r\n\rQuestion\r\n\r\n").get()
        let again = try PromptFile.parse(PromptTranscript.render(file, answer: "A"), yaml: LibYAML.reader).get()
        #expect(again.messages.map(\.role) == [.user, .assistant])
    }

    @Test func aliasesThatExpandWithoutEndAreRefused() {
        var text = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...8 {
            let previous = level == 1 ? "a" : "l\(level - 1)"
            text += "l\(level): &l\(level) [" + Array(repeating: "*\(previous)", count: 10).joined(separator: ", ") + "]\n"
        }
        text += "---\nHi"
        guard case .failure(let problem) = parse(text) else { Issue.record("accepted a billion values"); return }
        #expect(problem.kind == .invalidFrontMatter && problem.message.contains("expands to more than"))
    }

    @Test func aDeepDocumentIsRefusedNotRecursedInto() {
        let deep = "---\nparams:\n  x: " + String(repeating: "[", count: 500) + String(repeating: "]", count: 500) + "\n---\nHi"
        guard case .failure(let problem) = parse(deep) else { Issue.record("accepted"); return }
        #expect(problem.kind == .invalidFrontMatter)
    }

    /// Few nodes, much text: a 2 MB string and 1,500 aliases of it stood for 3 GB of body,
    /// and the daemon died at intake, again at every start.
    @Test func aliasesOfALongStringAreRefusedByTheirText() {
        let text = "---\nmodel: m\nparams:\n  a: &a \"" + String(repeating: "X", count: 1 << 20) + "\"\n  b: ["
            + Array(repeating: "*a", count: 64).joined(separator: ", ") + "]\n---\nHi"
        guard case .failure(let problem) = parse(text) else { Issue.record("accepted 64 MiB of aliased text"); return }
        #expect(problem.message.contains("expands to more than 32 MiB of text"), "\(problem.message)")
    }

    /// The limit stops the parse at the 65th level: the whole of a 240 KB nest was read first
    /// before, which took libyaml 41 s (its cost grows with the square of the nesting).
    @Test(.timeLimit(.minutes(1))) func aVeryDeepDocumentStopsAtTheLimit() throws {
        let deep = "---\nparams:\n  x: " + String(repeating: "[", count: 120_000) + String(repeating: "]", count: 120_000) + "\n---\nHi"
        guard case .failure(let problem) = parse(deep) else { Issue.record("accepted"); return }
        #expect(problem.message.contains("nests deeper than 64 levels") && problem.line == 3, "\(problem)")
    }

    /// An alias nests as deep as what it stands for.
    @Test func aliasesCountTheNestingTheyStandFor() {
        var text = "---\nl0: &l0 [x]\n"
        for level in 1...70 { text += "l\(level): &l\(level) [*l\(level - 1)]\n" }
        guard case .failure(let problem) = parse(text + "---\nHi") else { Issue.record("accepted 70 levels through aliases"); return }
        #expect(problem.message.contains("nests deeper than 64 levels"), "\(problem.message)")
    }

    /// Anchors still stand for their node, of any kind; an alias before its anchor is refused.
    @Test func anchorsAndAliasesExpand() throws {
        let tree = try #require(try LibYAML.parse(Array("base: &b {x: 1, y: [a, b]}\nuse: *b\nname: &n hi\nagain: *n\n".utf8)).get())
        guard case .mapping(let pairs, _, _) = tree else { Issue.record("not a mapping: \(tree)"); return }
        #expect(pairs.count == 4)
        #expect(pairs[1].value == pairs[0].value)
        guard case .scalar("hi", _, _, _) = pairs[3].value else { Issue.record("the scalar's alias: \(pairs[3].value)"); return }
        guard case .failure(let problem) = LibYAML.parse(Array("a: *nowhere\n".utf8)) else { Issue.record("accepted an undefined alias"); return }
        #expect(problem.line == 1)
    }

    /// A string's tag makes a string; any other tag, and a merge key, are refused where
    /// before they were dropped (`!!binary aGVsbG8=` sent as the text, `<<` as a member).
    @Test func tagsAndMergeKeys() throws {
        let tree = try #require(try LibYAML.parse(Array("a: !!str 12\nb: ! 13\n".utf8)).get())
        guard case .mapping(let pairs, _, _) = tree else { Issue.record("not a mapping: \(tree)"); return }
        #expect(pairs.map(\.value) == [.scalar("12", quoted: true, line: 1, column: 4), .scalar("13", quoted: true, line: 2, column: 4)])
        for (text, expected) in [("model: !!binary aGVsbG8=\n", "!!binary"), ("params: !!map {a: 1}\nx: !!int 3\n", "!!int"),
                                 ("x: !custom [1]\n", "!custom")] {
            guard case .failure(let problem) = LibYAML.parse(Array(text.utf8)) else { Issue.record("accepted \(text)"); continue }
            #expect(problem.message.contains("YAML tags such as \(expected) are not supported"), "\(problem.message)")
        }
        guard case .failure(let problem) = LibYAML.parse(Array("base: &b {x: 1}\nparams:\n  <<: *b\n".utf8)) else {
            Issue.record("accepted a merge key")
            return
        }
        #expect(problem.message.contains("merge keys (<<) are not supported") && problem.line == 3)
        #expect(try LibYAML.parse(Array("a: \"<<\"\n\"<<\": 1\n".utf8)).get() != nil, "a quoted << is a plain key")
    }

    /// Lines ended by CR alone (classic Mac editors): before, the file was one line, its
    /// front matter unseen, and it failed for naming no model.
    @Test func aFileWithCarriageReturnsAloneIsReadByItsLines() throws {
        let file = try parse("---\rmodel: m\rtemperature: 0.5\r---\r## user\rHi\rthere\r## assistant\rHello\r## user\rAgain\r").get()
        #expect(file.settings.model == "m")
        #expect(file.messages.map(\.role) == [.user, .assistant, .user])
        #expect(file.messages.map(\.text) == ["Hi\nthere", "Hello", "Again"])
    }

    /// Found by a cold review of the event reader: a merge key through an alias, an alias
    /// inside the node it names (or under a name given twice), and a second document.
    @Test(arguments: [("x: &m <<\n*m : 1\n", "merge keys (<<) are not supported", 2),
                      ("p: &p {a: *p}\n", "an alias inside the node its anchor names", 1),
                      ("a: &x 1\nb: &x [*x]\n", "the anchor &x is defined twice", 2),
                      ("model: m\n--- # more\nsystem: evil\n", "a second YAML document", 2)])
    func refusedShapes(text: String, message: String, line: Int) {
        guard case .failure(let problem) = LibYAML.parse(Array(text.utf8)) else { Issue.record("accepted \(text)"); return }
        #expect(problem.message.contains(message) && problem.line == line, "\(problem)")
    }
}
