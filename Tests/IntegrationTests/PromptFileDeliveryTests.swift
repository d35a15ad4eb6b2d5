import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Prompt files (`outgoing/<id>.md`, `.txt`) through the real daemon and the stub: the
/// body made from the file, the transcript and the result, conversations continued by
/// saving the transcript again, drafts, the default-model rule, and the commands.
@Suite(.serialized) struct PromptFileDeliveryTests {
    /// Drops `text` as `outgoing/<name>` the safe way: a dot-file, then a rename.
    static func drop(_ harness: Harness, _ name: String, _ text: String) throws {
        let hidden = "\(harness.layout.outgoing)/.\(name).tmp"
        try DurableFile.write(Array(text.utf8), to: hidden, syncDirectory: false)
        try Syscall.rename(hidden, "\(harness.layout.outgoing)/\(name)")
    }

    static func text(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    func started(_ config: [String: Any] = ["default_model": "stub-model"]) throws -> Harness {
        let harness = try Harness()
        try harness.startStub()
        try harness.startDaemon(config: config)
        return harness
    }

    @Test func aPromptFileIsAnsweredWithATranscriptThenTheResult() throws {
        let harness = try started()
        defer { harness.stop() }
        try Self.drop(harness, "hello.md", "Hello there, spool.\n")
        try waitUntil("hello is answered", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.result("hello")) }
        let answer = StubAnswer.content(prompt: "Hello there, spool.", tokens: 8)
        // The result is the last file to appear: the transcript is already there.
        #expect(Self.text(harness.layout.transcript("hello")) == "## user\n\nHello there, spool.\n\n## assistant\n\n\(answer)\n")
        let result = try harness.json(harness.layout.result("hello"))
        #expect(Harness.content(of: result) == answer)
        #expect((result["usage"] as? [String: Any])?["total_tokens"] is Int, "a streamed prompt asks for its usage")
        try SDKJudge.expectParses("ChatCompletion", [harness.layout.result("hello")])
        #expect(FileManager.default.fileExists(atPath: harness.layout.rawStream("hello")), "prompt files stream: the raw events are kept")
        try waitUntil("outgoing is empty", timeout: 10) { harness.files(in: harness.layout.outgoing).isEmpty }
        #expect(try harness.stubArrivals().map(\.prompt) == ["Hello there, spool."])
        #expect(harness.files(in: harness.layout.failed).isEmpty)
    }

    @Test func thePartialShowsThePlainTextMidStream() throws {
        let harness = try started()
        defer { harness.stop() }
        try Self.drop(harness, "live.md", "---\nparams:\n  stub: {tokens: 40, token_delay_ms: 100}\n---\nStream slowly ✓\n")
        let answer = StubAnswer.content(prompt: "Stream slowly ✓", tokens: 40)
        var seen = ""
        try waitUntil("the .partial shows a few words", timeout: 30) {
            seen = Self.text(harness.layout.partial("live")) ?? ""
            return seen.contains(" tök3")
        }
        #expect(answer.hasPrefix(seen) && seen.count < answer.count, "plain text, part of the answer: \(seen.debugDescription)")
        #expect(!seen.contains("data:"), "no raw events in the .partial")
        #expect(FileManager.default.fileExists(atPath: harness.layout.rawEvents("live")), "the raw events go aside meanwhile")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.result("live")))
        do {
            try waitUntil("live is answered", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.result("live")) }
        } catch {
            Issue.record("incoming: \(harness.files(in: harness.layout.incoming)), failed: \(harness.files(in: harness.layout.failed)), log: \(harness.log.suffix(4000))")
            throw error
        }
        #expect(Harness.content(of: try harness.json(harness.layout.result("live"))) == answer)
        try waitUntil("the text .partial is gone", timeout: 10) { !FileManager.default.fileExists(atPath: harness.layout.partial("live")) }
        #expect(!FileManager.default.fileExists(atPath: harness.layout.rawEvents("live")))
        #expect(Self.text(harness.layout.rawStream("live"))?.contains("data: [DONE]") == true, "the raw events are kept as .sse")
    }

    @Test func frontMatterAndAConversationReachTheEndpointAsAChatBody() throws {
        let harness = try started()
        defer { harness.stop() }
        let text = """
        ---
        model: "chosen-model"
        system: Answer in one word.
        stream: false
        max_tokens: 50
        params:
          stub: {tokens: 3}
          top_p: 0.5
        ---
        ## user
        Ünïcødé ✓ first

        ## Assistant
        Earlier answer.

        ## USER
        \(String(repeating: "long prompt 日本語 ", count: 20_000))end
        """
        try Self.drop(harness, "conv.txt", text)
        try waitUntil("conv is answered", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("conv")) || !harness.files(in: harness.layout.failed).isEmpty
        }
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.files(in: harness.layout.failed))")
        let result = try harness.json(harness.layout.result("conv"))
        #expect(result["model"] as? String == "chosen-model")
        let last = String(repeating: "long prompt 日本語 ", count: 20_000) + "end"
        #expect(Harness.content(of: result) == StubAnswer.content(prompt: last, tokens: 3), "params reach the body: the stub's own directive")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.rawStream("conv")), "stream: false is a plain answer")
        let transcript = try #require(Self.text(harness.layout.transcript("conv")))
        #expect(transcript.hasPrefix("---\nmodel: \"chosen-model\"\n"), "the front matter as written")
        #expect(transcript.hasSuffix("## assistant\n\n\(StubAnswer.content(prompt: last, tokens: 3))\n"))
    }

    @Test func continuingTheTranscriptTwiceGivesEveryTurnInOrder() throws {
        let harness = try started()
        defer { harness.stop() }
        try Self.drop(harness, "chat.md", "---\nparams: {stub: {tokens: 2}}\n---\nFirst question\n")
        var answers: [String] = []
        for (round, question) in ["First question", "Second question", "Third question"].enumerated() {
            let answer = StubAnswer.content(prompt: question, tokens: 2)
            answers.append(answer)
            try waitUntil("round \(round + 1) is answered", timeout: 30) {
                Self.text(harness.layout.transcript("chat"))?.hasSuffix("## assistant\n\n\(answer)\n") == true
                    && Harness.content(of: (try? harness.json(harness.layout.result("chat"))) ?? [:]) == answer
                    && harness.files(in: harness.layout.outgoing).isEmpty
            }
            guard round < 2 else { break }
            let transcript = try #require(Self.text(harness.layout.transcript("chat")))
            // What a person does: copy the transcript back into outgoing with a new question.
            try Self.drop(harness, "chat.md", transcript + "\n## user\n\n\(["Second question", "Third question"][round])\n")
        }
        let final = try #require(Self.text(harness.layout.transcript("chat")))
        let file = try PromptFile.parse(Array(final.utf8), yaml: LibYAML.reader).get()
        #expect(file.messages.map(\.role) == [.user, .assistant, .user, .assistant, .user, .assistant])
        #expect(file.messages.map(\.text) == ["First question", answers[0], "Second question", answers[1], "Third question", answers[2]])
        #expect(try harness.stubArrivals().map(\.prompt) == ["First question", "Second question", "Third question"])
        #expect(harness.files(in: harness.layout.failed).isEmpty)
    }

    @Test func withoutAModelOrADefaultAPromptFailsSayingSoAndBadFrontMatterNamesItsPosition() throws {
        let harness = try started([:])
        defer { harness.stop() }
        try Self.drop(harness, "nomodel.md", "Which model am I?\n")
        try Self.drop(harness, "typo.md", "---\nmodel: m\nmodle: n\n---\nHi\n")
        try waitUntil("both failed", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.failed + "/nomodel.md")
                && FileManager.default.fileExists(atPath: harness.layout.failed + "/typo.md")
        }
        let noModel = try harness.json(harness.layout.errorRecord("nomodel"))
        #expect(noModel["kind"] as? String == "invalid-request")
        #expect((noModel["message"] as? String)?.contains("default_model") == true, "\(noModel)")
        #expect((noModel["summary"] as? String)?.hasPrefix("nomodel.md was not sent: the prompt file names no model") == true, "\(noModel)")
        let typo = try harness.json(harness.layout.errorRecord("typo"))
        let problem = try #require(typo["problem"] as? [String: Any])
        #expect(problem["kind"] as? String == "invalid-front-matter")
        #expect(problem["line"] as? Int == 3 && problem["column"] as? Int == 1, "\(problem)")
        #expect(typo["request"] as? String == harness.layout.failed + "/typo.md")
        #expect(Self.text(harness.layout.failed + "/typo.md") == "---\nmodel: m\nmodle: n\n---\nHi\n", "the file is kept as it was")
        #expect(try harness.stubArrivals().isEmpty, "nothing was sent")
        // retry, hold, release and show find a prompt file by its own ending.
        let retried = try harness.cli(["retry", "typo", "--spool", harness.layout.root])
        #expect(retried.status == 0, "\(retried.stderr)")
        // The daemon judges it again at once; it fails the same way.
        try waitUntil("typo failed again", timeout: 30) {
            harness.log.components(separatedBy: "unknown front matter key").count > 2
                && FileManager.default.fileExists(atPath: harness.layout.failed + "/typo.md")
        }
        _ = harness.stopDaemon()
        #expect(try harness.cli(["retry", "typo", "--spool", harness.layout.root]).status == 0)
        #expect(FileManager.default.fileExists(atPath: harness.layout.outgoing + "/typo.md"))
        #expect(try harness.cli(["hold", "typo", "--spool", harness.layout.root]).status == 0)
        #expect(FileManager.default.fileExists(atPath: harness.layout.root + "/hold/typo.md"))
        #expect(try harness.cli(["release", "typo", "--spool", harness.layout.root]).status == 0)
        let shown = try harness.cli(["show", "typo", "--spool", harness.layout.root])
        #expect(shown.stdout.contains(harness.layout.outgoing + "/typo.md"), "\(shown.stdout)")
        #expect(try harness.cli(["cancel", "typo", "--spool", harness.layout.root]).status == 0)
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
    }

    @Test func aDraftStaysInOutgoingUntilSavedWithoutTheMark() throws {
        let harness = try started(["default_model": "stub-model", "rescan_interval_seconds": 0.5])
        defer { harness.stop() }
        try Self.drop(harness, "draft.md", "---\ndraft: true\n---\nHalf a thou")
        try Self.drop(harness, "draft2.json", #"{"draft": true, "model": "stub-model", "messages": [{"role": "user", "content": "not yet"}]}"#)
        try waitUntil("the daemon saw the drafts", timeout: 20) { harness.log.components(separatedBy: "left in outgoing as a draft").count == 3 }
        let status = try harness.cli(["status", "--json", "--spool", harness.layout.root])
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect((summary["drafts"] as? [String])?.sorted() == ["draft.md", "draft2.json"], "\(status.stdout)")
        #expect(try harness.cli(["status", "--spool", harness.layout.root]).stdout.contains("drafts (not sent until saved without the draft mark): draft.md  draft2.json"))
        // Rescans do not send them either.
        usleep(1_500_000)
        #expect(try harness.stubArrivals().isEmpty)
        #expect(harness.files(in: harness.layout.outgoing) == ["draft.md", "draft2.json"])
        #expect(harness.files(in: harness.layout.failed).isEmpty)
        try Self.drop(harness, "draft.md", "---\ndraft: false\n---\nHalf a thought, finished.")
        try waitUntil("the finished draft is answered", timeout: 90) { FileManager.default.fileExists(atPath: harness.layout.result("draft")) }
        #expect(try harness.stubArrivals().map(\.prompt) == ["Half a thought, finished."])
        // The request leaves outgoing just after its result appears.
        try waitUntil("only the JSON draft is left", timeout: 10) { harness.files(in: harness.layout.outgoing) == ["draft2.json"] }
    }

    @Test func aJSONAndAPromptFileOfTheSameIdAreSentOneAfterTheOther() throws {
        let harness = try started()
        defer { harness.stop() }
        _ = harness.stopDaemon()
        // Both present when the daemon starts, and a third dropped while they run.
        try harness.drop("twin", Harness.request("as json", stream: true, stub: ["tokens": 20, "token_delay_ms": 20]))
        try Self.drop(harness, "twin.md", "---\nparams: {stub: {tokens: 20, token_delay_ms: 20}}\n---\nas markdown\n")
        try harness.startDaemon(config: ["default_model": "stub-model"])
        try Self.drop(harness, "twin.txt", "as text\n")
        try waitUntil("every twin is answered", timeout: 60) {
            harness.files(in: harness.layout.outgoing).isEmpty && (try? harness.stubArrivals().count) == 3
        }
        usleep(1_000_000)
        let arrivals = try harness.stubArrivals()
        #expect(Set(arrivals.map(\.prompt)) == ["as json", "as markdown", "as text"], "each sent once")
        #expect(arrivals.count == 3)
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.files(in: harness.layout.failed))")
        // One at a time: each starts after the one before has ended.
        let log = harness.log
        #expect(!log.contains("cancelled"), "no twin cancelled another")
    }

    @Test func aPromptFileGoesToTheEndpointItNamesOrFailsNamingTheEndpoints() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // The first endpoint refuses every connection: only a request pinned to the second is answered at once.
        try harness.startDaemon(config: ["default_model": "stub-model", "max_attempts": 1, "endpoints": [
            ["name": "dead", "base_url": "http://127.0.0.1:9/v1"], ["name": "stub", "base_url": harness.stubURL],
        ]])
        try Self.drop(harness, "pinned.md", "---\nendpoint: stub\n---\nPinned\n")
        try Self.drop(harness, "nowhere.md", "---\nendpoint: elsewhere\n---\nLost\n")
        try waitUntil("both ended", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("pinned"))
                && FileManager.default.fileExists(atPath: harness.layout.errorRecord("nowhere"))
        }
        #expect(try harness.json(harness.layout.taskRecord("pinned"))["endpoint"] as? String == "stub")
        let record = try harness.json(harness.layout.errorRecord("nowhere"))
        #expect((record["message"] as? String)?.contains("names no configured endpoint (the endpoints are dead, stub)") == true, "\(record)")
        #expect(try harness.stubArrivals().map(\.prompt) == ["Pinned"])
    }

    @Test func submitAPromptFileAndAskPrintTheAnswerAsItStreams() throws {
        let harness = try started()
        defer { harness.stop() }
        let file = harness.root + "/question.md"
        try "---\nparams: {stub: {tokens: 4}}\n---\nSubmitted prompt\n".write(toFile: file, atomically: true, encoding: .utf8)
        let submitted = try harness.cli(["submit", file, "--id", "sub", "--wait", "--spool", harness.layout.root])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        #expect(submitted.stdout == StubAnswer.content(prompt: "Submitted prompt", tokens: 4))
        #expect(FileManager.default.fileExists(atPath: harness.layout.transcript("sub")))

        let asked = try harness.cli(["ask", "What is 2+2?", "--model", "stub-model", "--system", "Be brief.", "--id", "q", "--wait",
                                     "--spool", harness.layout.root])
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stdout == StubAnswer.content(prompt: "What is 2+2?", tokens: 8))
        let transcript = try #require(Self.text(harness.layout.transcript("q")))
        #expect(transcript.hasPrefix("---\nmodel: \"stub-model\"\nsystem: \"Be brief.\"\n---\n\n## user\n\nWhat is 2+2?\n\n## assistant\n\n"))

        for bad in [["ask"], ["ask", "   "], ["ask", "q", "extra"], ["ask", "q", "--model", ""], ["ask", "q", "--timeout", "5"],
                    ["ask", "q", "--id", "-x"], ["ask", "q", "--frobnicate"]] {
            let refused = try harness.cli(bad + ["--spool", harness.layout.root])
            #expect(refused.status == 2, "\(bad): \(refused.stderr)")
            #expect(refused.stderr.contains("see `llmspool ask --help`"), "\(bad): \(refused.stderr)")
        }
        #expect(try harness.cli(["ask", "--help"]).stdout.contains("Usage: llmspool ask"))
        let broken = harness.root + "/broken.md"
        try "---\ntemperature: hot\n---\nHi\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let refused = try harness.cli(["submit", broken, "--spool", harness.layout.root])
        #expect(refused.status == 1 && refused.stderr.contains("\"temperature\" must be a number") && refused.stderr.contains("line 2, column 14"),
                "\(refused.stderr)")
        try waitUntil("outgoing is empty", timeout: 10) { harness.files(in: harness.layout.outgoing).isEmpty }
        #expect(try harness.stubArrivals().count == 2, "only the two good requests were sent")
    }
}
