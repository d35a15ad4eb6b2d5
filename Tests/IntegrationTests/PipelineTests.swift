import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// The drop-folder contract, end to end: the real daemon, the real stub, real sockets.
@Suite(.serialized) struct PipelineTests {
    @Test func fiftyMixedRequestsAllEndInIncomingWithTheirOwnAnswers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--tokens", "6"])
        try harness.startDaemon()
        for index in 0..<50 {
            try harness.drop("r\(index)", Harness.request("prompt number \(index) ✓", stream: index % 2 == 0))
        }
        try waitUntil("50 results are in incoming", timeout: 60) {
            harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".json") }.count == 50
        }
        for index in 0..<50 {
            let id = "r\(index)"
            let result = try harness.json(harness.layout.result(id))
            #expect(Harness.content(of: result) == StubAnswer.content(prompt: "prompt number \(index) ✓", tokens: 6), "\(id)")
            #expect(result["object"] as? String == "chat.completion")
            let streamed = index % 2 == 0
            #expect(FileManager.default.fileExists(atPath: harness.layout.rawStream(id)) == streamed, "\(id): .sse only for streams")
        }
        try waitUntil("outgoing is empty", timeout: 10) {
            harness.files(in: harness.layout.outgoing).isEmpty
        }
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".partial") || $0.hasPrefix(".") }.isEmpty)
        #expect(harness.files(in: harness.layout.failed).isEmpty)
        #expect(harness.stopDaemon() == 0)
        #expect(harness.filesContainingSecret().isEmpty)
    }

    /// Small bodies go to libcurl from memory (`CURLOPT_COPYPOSTFIELDS`), not through the
    /// read callback: the stub still answers each its own prompt, and each record still says
    /// how many body bytes went out (the file's own for a plain request; a stream's body has
    /// the usage member put in, so more).
    @Test func bodiesSentFromMemoryAreCountedInTheRecord() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--tokens", "3"])
        try harness.startDaemon()
        var sizes: [String: Int] = [:]
        for index in 0..<6 {
            let id = "counted\(index)"
            let bytes = Array(try JSONSerialization.data(withJSONObject: Harness.request("count me \(index) ✓", stream: index % 2 == 1)))
            sizes[id] = bytes.count
            try harness.drop(id, bytes: bytes)
        }
        try waitUntil("6 results are in incoming", timeout: 60) {
            (0..<6).allSatisfy { FileManager.default.fileExists(atPath: harness.layout.result("counted\($0)")) }
        }
        for index in 0..<6 {
            let id = "counted\(index)"
            #expect(Harness.content(of: try harness.json(harness.layout.result(id))) == StubAnswer.content(prompt: "count me \(index) ✓", tokens: 3))
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]], "\(id)")
            let sent = try #require((attempts.last?["bytes_sent"] as? NSNumber)?.intValue, "\(id)")
            if index % 2 == 1 {
                #expect(sent > sizes[id]!, "\(id): the stream's body carries the usage member")
            } else {
                #expect(sent == sizes[id]!, "\(id)")
            }
        }
        #expect(harness.stopDaemon() == 0)
    }

    @Test func requestsAlreadyPresentAtStartAreProcessed() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        for index in 0..<5 {
            try harness.drop("early\(index)", Harness.request("early \(index)", stream: index == 0))
        }
        try harness.startDaemon()
        try waitUntil("the early requests are answered", timeout: 30) {
            (0..<5).allSatisfy { FileManager.default.fileExists(atPath: harness.layout.result("early\($0)")) }
        }
        try waitUntil("outgoing is empty", timeout: 10) { harness.files(in: harness.layout.outgoing).isEmpty }
    }

    @Test func theRequestStaysInOutgoingWhileItsAnswerStreams() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let id = "slow"
        try harness.drop(id, Harness.request("take your time", stream: true, stub: ["tokens": 30, "token_delay_ms": 100]))
        let partial = harness.layout.partial(id)
        try waitUntil("the answer has begun to stream", timeout: 20) {
            let text = String(decoding: (try? FileReader.prefix(path: partial, limit: 1 << 20)) ?? [], as: UTF8.self)
            return text.contains("tök2")
        }
        #expect(FileManager.default.fileExists(atPath: harness.layout.request(id)), "the request stays until its task ends")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.result(id)), "the result appears only at the end")
        try waitUntil("the answer is complete", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result(id))
        }
        #expect(Harness.content(of: try harness.json(harness.layout.result(id))) == StubAnswer.content(prompt: "take your time", tokens: 30))
        try waitUntil("the request left outgoing", timeout: 10) { !FileManager.default.fileExists(atPath: harness.layout.request(id)) }
        #expect(!FileManager.default.fileExists(atPath: partial))
    }

    @Test func badJSONAndAnHTTP500EachEndInFailedWithARecord() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_attempts": 2, "retry_initial_seconds": 0.05, "cooldown_after_failures": 100])
        try harness.drop("broken", bytes: Array("{\n  \"model\": \"m\",\n  \"messages\": [oops]\n}".utf8))
        try harness.drop("refused", Harness.request("please fail", stub: ["status": 500]))
        try harness.drop("refused-stream", Harness.request("please fail", stream: true, stub: ["status": 500]))
        try waitUntil("three error records exist", timeout: 30) {
            ["broken", "refused", "refused-stream"].allSatisfy { FileManager.default.fileExists(atPath: harness.layout.errorRecord($0)) }
        }
        let broken = try harness.json(harness.layout.errorRecord("broken"))
        #expect(broken["kind"] as? String == "invalid-request")
        #expect(broken["attempts"] as? Int == 0)
        let problem = try #require(broken["problem"] as? [String: Any])
        #expect(problem["kind"] as? String == "invalid-json")
        #expect(problem["line"] as? Int == 3)
        #expect((broken["message"] as? String)?.contains("broken.json") == true, "the record names the file")
        for id in ["refused", "refused-stream"] {
            let record = try harness.json(harness.layout.errorRecord(id))
            #expect(record["kind"] as? String == "http")
            #expect(record["http_status"] as? Int == 500)
            #expect(record["attempts"] as? Int == 2, "a 500 is retried, then fails")
            #expect((record["message"] as? String)?.contains("gave up after 2 attempts") == true)
            let provider = try #require(record["provider_error"] as? [String: Any])
            #expect(ProviderError.message(in: provider)?.contains("500") == true)
            let log = try #require(record["attempt_log"] as? [[String: Any]])
            #expect(log.map { $0["http_status"] as? Int } == [500, 500])
        }
        try waitUntil("the requests moved to failed", timeout: 10) {
            ["broken", "refused", "refused-stream"].allSatisfy { FileManager.default.fileExists(atPath: harness.layout.failedRequest($0)) }
        }
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        #expect(harness.files(in: harness.layout.incoming).isEmpty, "no .partial and no result is left behind")
        #expect(harness.filesContainingSecret().isEmpty)
        #expect(!harness.log.contains(Harness.secret))
    }

    @Test func temporaryAndEditorFilesAreNeverTouched() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let ignored = [".hidden.json", "draft.json~", ".draft.json.swp", "4913", "#draft.json#", "notes.log", "x.json.tmp",
                       "draft.md~", ".draft.md.swp", "#draft.md#", ".#draft.md", "x.md.tmp", "notes.markdown"]
        for name in ignored {
            try DurableFile.write(Array("{}".utf8), to: "\(harness.layout.outgoing)/\(name)", syncDirectory: false)
        }
        try harness.drop("real", Harness.request("only me"))
        // The result appears first; the request leaves outgoing just after.
        try waitUntil("the real request is answered and removed", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("real")) && !FileManager.default.fileExists(atPath: harness.layout.request("real"))
        }
        #expect(harness.files(in: harness.layout.outgoing) == ignored.sorted())
        #expect(harness.files(in: harness.layout.failed).isEmpty)
    }

    @Test func anUnreachableEndpointIsATransportFailure() throws {
        let harness = try Harness()
        defer { harness.stop() }
        // Port 9 (discard) on loopback has no listener: the connection is refused at once.
        try harness.startDaemon(config: ["max_attempts": 3, "retry_initial_seconds": 0.05, "cooldown_after_failures": 100],
                                arguments: ["--base-url", "http://127.0.0.1:9/v1"])
        try harness.drop("nowhere", Harness.request("hello?"))
        try waitUntil("the failure is recorded", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.errorRecord("nowhere"))
        }
        let record = try harness.json(harness.layout.errorRecord("nowhere"))
        #expect(record["kind"] as? String == "transport")
        #expect(record["attempts"] as? Int == 3)
        #expect(harness.filesContainingSecret().isEmpty)
    }

    @Test func sigtermStopsTheDaemonCleanly() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        #expect(harness.stopDaemon() == 0)
        #expect(harness.log.contains("stopped"))
    }
}
