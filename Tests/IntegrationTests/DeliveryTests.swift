import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Delivery against a misbehaving endpoint, over real sockets: the stub injects each fault
/// for the first attempts of a request and logs when each attempt arrived.
@Suite(.serialized) struct DeliveryTests {
    func waitForResult(_ harness: Harness, _ id: String, timeout: TimeInterval = 30) throws {
        try waitUntil("\(id) has a result", timeout: timeout) {
            FileManager.default.fileExists(atPath: harness.layout.result(id))
        }
    }

    @Test func aRetryAfterOfThreeSecondsIsWaitedInFull() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("patient", Harness.request("wait for me", stub: ["faults": [["status": 429, "retry_after": 3]]]))
        try waitForResult(harness, "patient")
        let times = try harness.arrivals(of: "wait for me")
        #expect(times.count == 2)
        #expect(times[1] - times[0] >= 3.0, "the stub saw the retry \(times[1] - times[0]) s after the 429")
        #expect(Harness.content(of: try harness.json(harness.layout.result("patient"))) == StubAnswer.content(prompt: "wait for me", tokens: 8))
        let attempts = try #require(try harness.record("patient")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["http_status"] as? Int } == [429, 200])
    }

    @Test func aStreamCutTwiceThenWholeGivesExactlyTheWholeAnswer() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let prompt = "cut me twice"
        try harness.drop("cut", Harness.request(prompt, stream: true, stub: ["tokens": 6, "faults": [["cut_after": 3], ["truncate_after": 4]]]))
        try waitForResult(harness, "cut")
        #expect(Harness.content(of: try harness.json(harness.layout.result("cut"))) == StubAnswer.content(prompt: prompt, tokens: 6))
        let raw = String(decoding: try FileReader.prefix(path: harness.layout.rawStream("cut"), limit: 1 << 20), as: UTF8.self)
        #expect(raw.components(separatedBy: "tök1").count == 2, "each chunk is delivered once: the .partial restarts from zero")
        #expect(raw.components(separatedBy: "[DONE]").count == 2)
        #expect(try harness.arrivals(of: prompt).count == 3)
        let attempts = try #require(try harness.record("cut")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["outcome"] as? String } == ["transport", "incomplete-stream", "ok"])
    }

    /// A long answer's text goes to the result's temporary as it arrives; a cut attempt's
    /// temporary is removed, and the next attempt's result holds the text exactly once.
    @Test func aLongAnswerCutOnceIsWrittenWholeAndOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let bulk = 3 << 20
        try harness.drop("long", Harness.request("a long answer", stream: true, stub: ["bulk_bytes": bulk, "faults": [["cut_after": 1]]]))
        try waitForResult(harness, "long")
        let content = try #require(Harness.content(of: try harness.json(harness.layout.result("long"))))
        let events = String(decoding: try FileReader.prefix(path: harness.layout.rawStream("long"), limit: 8 << 20), as: UTF8.self)
            .components(separatedBy: "abcdefghijklmnop").count - 1
        #expect(events > bulk / 17, "the stream carried the long text")
        #expect(content.utf8.count == events * 16, "every piece of text is in the result exactly once")
        #expect(content == String(repeating: "abcdefghijklmnop", count: events))
        let attempts = try #require(try harness.record("long")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["outcome"] as? String } == ["transport", "ok"])
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasPrefix(".") || $0.hasSuffix(".partial") }.isEmpty)
    }

    /// Under a low open-files limit, transfers past the descriptor budget write their
    /// `.partial` by name instead of holding it open; every answer is still exact.
    @Test func pastTheDescriptorBudgetPartialsAreWrittenByName() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let limit = 128  // a budget of 32 open partials
        try harness.startDaemon(config: ["concurrency": 60], openFilesLimit: limit)
        let pid = try #require(harness.daemon?.processIdentifier)
        var prompts: [String: (String, Bool, Int)] = [:]
        for index in 0..<60 {
            let streamed = index % 3 != 0
            let prompt = "budget \(index)"
            let stub: [String: Any] = streamed ? ["tokens": 10, "token_delay_ms": 150] : ["tokens": 5, "latency_ms": 1500]
            prompts["b\(index)"] = (prompt, streamed, streamed ? 10 : 5)
            try harness.drop("b\(index)", Harness.request(prompt, stream: streamed, stub: stub))
        }
        var mostOpen = 0
        var sawInFlight = 0
        let deadline = Date().addingTimeInterval(60)
        while harness.files(in: harness.layout.incoming).filter({ $0.hasSuffix(".json") && !$0.hasPrefix(".") }).count < 60 && Date() < deadline {
            let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).filter {
                ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) ?? "").hasSuffix(".partial")
            }.count
            mostOpen = max(mostOpen, open)
            sawInFlight = max(sawInFlight, harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".partial") }.count)
            usleep(20_000)
        }
        #expect(sawInFlight > limit / 4, "more transfers were in flight than the budget")
        #expect(mostOpen <= limit / 4, "no more partials held open than the budget")
        for (id, (prompt, streamed, tokens)) in prompts {
            let result = try harness.json(harness.layout.result(id))
            #expect(Harness.content(of: result) == StubAnswer.content(prompt: prompt, tokens: tokens), "\(id) streamed \(streamed)")
        }
        #expect(harness.files(in: harness.layout.failed).isEmpty)
    }

    @Test func aStallWithKeepAlivesIsEndedByTheIdleTimerAndRetried() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["idle_timeout_seconds": 1])
        let prompt = "stall then talk"
        try harness.drop("stall", Harness.request(prompt, stream: true, stub: ["faults": [["stall_ms": 6000, "keepalive_ms": 100]]]))
        try waitForResult(harness, "stall")
        let times = try harness.arrivals(of: prompt)
        #expect(times.count == 2)
        #expect(times[1] - times[0] >= 1.0)
        #expect(times[1] - times[0] < 5.0, "keep-alives must not reset the idle timer")
        let attempts = try #require(try harness.record("stall")["attempts"] as? [[String: Any]])
        #expect(attempts.first?["timer"] as? String == "idle")
        #expect(attempts.count == 2)
    }

    @Test func anErrorInsideAStreamIsRetried() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("inner", Harness.request("inner error", stream: true, stub: ["faults": [["error_in_stream": true]]]))
        try waitForResult(harness, "inner")
        let attempts = try #require(try harness.record("inner")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["outcome"] as? String } == ["provider-error", "ok"])
    }

    @Test func a400IsTriedOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("bad", Harness.request("reject me", stub: ["faults": [["status": 400]]]))
        try waitUntil("the failure is recorded", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.failedRequest("bad"))
        }
        let record = try harness.json(harness.layout.errorRecord("bad"))
        #expect(record["attempts"] as? Int == 1)
        #expect(record["http_status"] as? Int == 400)
        #expect(try harness.arrivals(of: "reject me").count == 1)
    }

    @Test func aDeadPrimaryFallsBackToTheSecondary() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: [
            "endpoints": [
                ["name": "primary", "base_url": "http://127.0.0.1:9/v1"],
                ["name": "secondary", "base_url": harness.stubURL, "model": "fallback-model"],
            ],
        ])
        try harness.drop("fallback", Harness.request("anyone there?"))
        try waitForResult(harness, "fallback")
        let result = try harness.json(harness.layout.result("fallback"))
        #expect(result["model"] as? String == "fallback-model", "the secondary's model rewrite was sent")
        let record = try harness.record("fallback")
        #expect(record["endpoint"] as? String == "secondary")
        let attempts = try #require(record["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["endpoint"] as? String } == ["primary", "secondary"])
        #expect(attempts.first?["outcome"] as? String == "transport")
    }

    @Test func attemptsAndTheNextAttemptTimeSurviveARestart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let prompt = "remember me"
        try harness.drop("durable", Harness.request(prompt, stub: ["faults": [["status": 503, "retry_after": 4]]]))
        try waitUntil("the first attempt is recorded", timeout: 20) {
            ((try? harness.record("durable"))?["attempts"] as? [Any])?.count == 1
        }
        #expect(harness.stopDaemon() == 0)
        #expect(FileManager.default.fileExists(atPath: harness.layout.request("durable")), "the request waits in outgoing")
        try harness.startDaemon()
        try waitForResult(harness, "durable")
        let times = try harness.arrivals(of: prompt)
        #expect(times.count == 2)
        #expect(times[1] - times[0] >= 4.0, "the restarted daemon kept the next-attempt time")
        let attempts = try #require(try harness.record("durable")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["http_status"] as? Int } == [503, 200], "the attempt count carried over")
    }
}
