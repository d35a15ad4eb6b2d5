import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolModel
import Testing

/// Batch files through the background lane, with the real daemon and the stub's Files and
/// Batches API: a `.jsonl` batch's lines that may wait go through one remote batch per url,
/// the others live, and every line ends with exactly one output line of the batch, across
/// kill -9 at the lane's steps, cancellation and a replaced input.
@Suite(.serialized) struct BackgroundLaneBatchFileTests {
    func config(_ harness: Harness, _ extra: [String: Any] = [:]) -> [String: Any] {
        var config = BackgroundLaneTests.lane
        config["endpoints"] = [["name": "batchy", "base_url": harness.stubURL, "batch": true]]
        config.merge(extra) { $1 }
        return config
    }

    /// One OpenAI batch line; `window` nil for a live one.
    static func line(_ id: String, _ prompt: String, url: String = "/v1/chat/completions", window: String? = "24h",
                     stub: [String: Any]? = nil) -> String {
        var body: [String: Any]
        if url == "/v1/embeddings" {
            body = ["model": "stub-embedding", "input": prompt]
            if let stub { body["stub"] = stub }
        } else {
            body = Harness.request(prompt, stub: stub)
        }
        var object: [String: Any] = ["custom_id": id, "method": "POST", "url": url, "body": body]
        if let window { object["completion_window"] = window }
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// The output's lines by custom_id, each exactly once, and the expected ids all there.
    func expectOneLineEach(_ harness: Harness, _ name: String, _ ids: [String]) throws -> [String: [String: Any]] {
        let output = try BatchTests.outputLines(harness.layout.batchOutput(name))
        #expect(output.count == ids.count, "one output line per input line: \(output.count) for \(ids.count)")
        let found = BatchTests.byID(output)
        #expect(Set(found.keys) == Set(ids), "\(found.keys.sorted())")
        return found
    }

    /// Each succeeded line's body through the SDK's type for its url.
    func judge(_ harness: Harness, _ lines: [[String: Any]], as type: String, file: String) throws {
        let bodies = try lines.map { line -> String in
            let body = try #require((line["response"] as? [String: Any])?["body"], "\(line)")
            return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        }
        let path = harness.root + "/" + file
        try Data((bodies.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        try SDKJudge.expectParses(type, [path], jsonl: true)
    }

    func remoteRecords(_ harness: Harness) -> [String] {
        harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }
    }

    @Test func aBatchsDeferrableLinesGoThroughOneRemoteBatchPerURLAndComeBackAsItsOutputLines() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "6"])
        try harness.startDaemon(config: config(harness, ["max_attempts": 2]))
        let chat = (1...4).map { "chat-\($0)" }
        let embed = (1...3).map { "embed-\($0)" }
        let live = (1...3).map { "live-\($0)" }
        var lines = chat.map { Self.line($0, "Batched \($0)") } + embed.map { Self.line($0, "Embedded \($0)", url: "/v1/embeddings") }
        lines += live.map { Self.line($0, "Live \($0)", window: nil) }
        // A line the remote batch fails is retried live; one it lets expire goes live (deferred_expired: live).
        lines.append(Self.line("flaky", "Remote failed", stub: ["batch_line": "fail"]))
        lines.append(Self.line("late", "Remote expired", stub: ["batch_line": "expire"]))
        let ids = chat + embed + live + ["flaky", "late"]
        try BatchTests.dropBatch(harness, "mixed", lines.shuffled())

        // The live lines are answered while the remote batches run: the .partial grows.
        try waitUntil("the live lines are in the partial output", timeout: 30) {
            let text = (try? String(contentsOfFile: harness.layout.batchPartial("mixed"), encoding: .utf8)) ?? ""
            return live.allSatisfy { text.contains("\"custom_id\":\"\($0)\"") }
        }
        #expect(!Syscall.isPresent(harness.layout.batchSummary("mixed")), "the batch runs on while its deferred lines wait")
        // While they run, status names each remote batch with the provider's counts, from
        // the running daemon's live status (a group per url: 6 chat lines, 3 embeddings).
        try waitUntil("status shows the remote batches and their counts", timeout: 30) {
            let shown = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
            let remote = (try JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: Any])?["remote_batches"] as? [[String: Any]] ?? []
            let totals = remote.compactMap { ($0["request_counts"] as? [String: Any])?["total"] as? Int }.sorted()
            let text = try harness.cli(["status", "--spool", harness.layout.root]).stdout
            return totals == [3, 6] && remote.allSatisfy { ($0["batch_id"] as? String)?.hasPrefix("batch_") == true }
                && text.contains(" of 6 completed, ") && text.contains(" of 3 completed, ")
        }

        let summary = try BatchTests.waitForSummary(harness, "mixed", timeout: 90)
        #expect(summary["status"] as? String == "completed", "\(summary)")
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["total"] as? Int == ids.count && counts["completed"] as? Int == ids.count && counts["failed"] as? Int == 0, "\(counts)")
        try SDKJudge.expectParses("Batch", [harness.layout.batchSummary("mixed")])
        let found = try expectOneLineEach(harness, "mixed", ids)
        for id in ids {
            let line = try #require(found[id])
            #expect(line["error"] is NSNull, "\(id): \(line)")
            #expect((line["id"] as? String)?.hasPrefix("batch_req_") == true)
            #expect((line["response"] as? [String: Any])?["status_code"] as? Int == 200)
        }
        for id in chat + live {
            let body = (found[id]?["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:]
            let prompt = id.hasPrefix("live") ? "Live \(id)" : "Batched \(id)"
            #expect(Harness.content(of: body)?.hasPrefix("Echo: \(prompt)") == true, "\(id) got another line's answer: \(body)")
        }
        for id in chat {
            let requestID = (found[id]?["response"] as? [String: Any])?["request_id"] as? String
            #expect(requestID?.hasPrefix("req_") == true, "the remote line's request id: \(requestID ?? "none")")
        }
        try judge(harness, (chat + live + ["flaky", "late"]).compactMap { found[$0] }, as: "ChatCompletion", file: "chat.jsonl")
        try judge(harness, embed.compactMap { found[$0] }, as: "CreateEmbeddingResponse", file: "embeddings.jsonl")

        // One remote batch per url, each created once; no deferrable line went live but the
        // failed and the expired one, once each.
        let made = try BackgroundLaneTests().creations(harness)
        #expect(made.count == 2 && made.values.allSatisfy { $0 == 1 }, "a group per url, each created once: \(made)")
        for id in chat { #expect(try harness.arrivals(of: "Batched \(id)").isEmpty, "\(id) was answered by the batch") }
        #expect(try harness.stubArrivalPaths().filter { $0.path.hasSuffix("/embeddings") }.isEmpty)
        for id in live { #expect(try harness.arrivals(of: "Live \(id)").count == 1) }
        #expect(try harness.arrivals(of: "Remote failed").count == 1, "the failed line was retried live")
        #expect(try harness.arrivals(of: "Remote expired").count == 1, "the expired line went live")
        try waitUntil("the lane's records are gone", timeout: 20) { remoteRecords(harness).isEmpty }
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, "mixed")), "no line leaves a file of its own")

        // The lines' tokens per lane in status: the remote batches' lines apart from the
        // live ones (the failed and the expired line were answered live).
        func promptTokens(_ chosen: [String]) -> Int {
            chosen.reduce(0) { $0 + ((((found[$1]?["response"] as? [String: Any])?["body"] as? [String: Any])?["usage"] as? [String: Any])?["prompt_tokens"] as? Int ?? 0) }
        }
        let batchPrompt = promptTokens(chat + embed)
        let allPrompt = promptTokens(ids)
        #expect(batchPrompt > 0 && allPrompt > batchPrompt)
        var shown: [String: Any] = [:]
        try waitUntil("status counts the lines' tokens per lane", timeout: 10) {
            let text = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
            shown = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
            return (shown["batch_tokens"] as? [String: Int])?["prompt_tokens"] == batchPrompt
        }
        #expect((shown["batch_tokens"] as? [String: Int])?["prompt_tokens"] == batchPrompt, "\(shown)")
        #expect((shown["tokens"] as? [String: Int])?["prompt_tokens"] == allPrompt, "\(shown)")
        #expect(!Syscall.isPresent(harness.layout.batchRequest("mixed")))
    }

    /// A kill -9 after the remote batch is created (before its id is recorded) and another
    /// mid-split (one line's outcome handed over): the batch resumes from its journal and
    /// the lane's record, no line is answered twice, no remote batch is created twice.
    @Test(arguments: ["created", "split"])
    func aKillAtALaneStepEndsTheBatchWithOneLinePerCustomIDAndOneRemoteBatch(point: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try harness.startDaemon(config: config(harness), environment: ["LLMSPOOL_TEST_LANE_PAUSE": point])
        let deferred = (1...6).map { "k-\($0)" }
        let live = ["k-live-1", "k-live-2"]
        let lines = deferred.map { Self.line($0, "Kill \(point) \($0)") } + live.map { Self.line($0, "Kill live \(point) \($0)", window: nil) }
        try BatchTests.dropBatch(harness, "killed", lines)
        try waitUntil("the lane pauses at \(point)", timeout: 30) { harness.log.contains("lane test pause point=\(point)") }
        let record = try #require(remoteRecords(harness).first)
        let state = try harness.json(harness.layout.remote + "/" + record)
        #expect(state["state"] as? String == (point == "created" ? "uploaded" : "split"), "\(state)")
        let group = try #require(state["group"] as? String)
        if point == "split" {
            // The first line's outcome went to the batch runner, which commits it with its next group.
            try waitUntil("the handed-over line is committed", timeout: 20) {
                let text = (try? String(contentsOfFile: harness.layout.batchPartial("killed"), encoding: .utf8)) ?? ""
                return deferred.contains { text.contains("\"custom_id\":\"\($0)\"") }
            }
        }
        harness.killDaemon()
        #expect(try BackgroundLaneTests().creations(harness) == [group: 1])
        try harness.startDaemon(config: config(harness))
        let summary = try BatchTests.waitForSummary(harness, "killed", timeout: 90)
        #expect(summary["status"] as? String == "completed", "\(summary)")
        let found = try expectOneLineEach(harness, "killed", deferred + live)
        for id in deferred + live {
            #expect(found[id]?["error"] is NSNull, "\(id): \(found[id] ?? [:])")
            let body = (found[id]?["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:]
            let prompt = live.contains(id) ? "Kill live \(point) \(id)" : "Kill \(point) \(id)"
            #expect(Harness.content(of: body)?.hasPrefix("Echo: \(prompt)") == true, "\(id): \(body)")
        }
        try judge(harness, (deferred + live).compactMap { found[$0] }, as: "ChatCompletion", file: "killed.jsonl")
        #expect(try BackgroundLaneTests().creations(harness) == [group: 1], "the group's batch was found again, not created again")
        for id in deferred { #expect(try harness.arrivals(of: "Kill \(point) \(id)").isEmpty, "\(id) was answered by the batch") }
        if point == "created" { #expect(harness.log.contains("remote batch found by its group id")) }
        try waitUntil("the lane's records are gone", timeout: 20) { remoteRecords(harness).isEmpty }
    }

    /// Deleting the input after its group is sent: the batch ends at once as cancelled, its
    /// deferred lines as `batch_cancelled`, and the remote batch, wanted by nobody, is cancelled.
    @Test func deletingTheInputAfterItsGroupIsSentCancelsTheBatchAndItsRemoteBatch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3600"])
        try harness.startDaemon(config: config(harness))
        let deferred = (1...3).map { "x-\($0)" }
        try BatchTests.dropBatch(harness, "gone", deferred.map { Self.line($0, "Cancelled \($0)") } + [Self.line("x-live", "Answered live", window: nil)])
        try waitUntil("the remote batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        try waitUntil("the live line is committed", timeout: 30) {
            ((try? String(contentsOfFile: harness.layout.batchPartial("gone"), encoding: .utf8)) ?? "").contains("\"custom_id\":\"x-live\"")
        }
        let group = try #require(try BackgroundLaneTests().creations(harness).keys.first)
        try Syscall.unlink(harness.layout.batchRequest("gone"))
        let summary = try BatchTests.waitForSummary(harness, "gone", timeout: 30)
        #expect(summary["status"] as? String == "cancelled", "\(summary)")
        let found = try expectOneLineEach(harness, "gone", deferred + ["x-live"])
        #expect(found["x-live"]?["error"] is NSNull)
        for id in deferred {
            #expect((found[id]?["error"] as? [String: Any])?["code"] as? String == "batch_cancelled", "\(id): \(found[id] ?? [:])")
        }
        try waitUntil("the remote batch is cancelled and the group ends", timeout: 30) {
            (try? BackgroundLaneTests().cancelledGroups(harness)) == [group] && remoteRecords(harness).isEmpty
        }
        for id in deferred { #expect(try harness.arrivals(of: "Cancelled \(id)").isEmpty) }
    }

    /// The input replaced by another file while its lines are in a remote batch: the old
    /// batch ends cancelled, the remote batch's answers for it are discarded (they are for
    /// a file that is gone), and the new file runs as a batch of its own.
    @Test func anInputReplacedWhileItsLinesAreInARemoteBatchGetsNoneOfItsAnswers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "4"])
        try harness.startDaemon(config: config(harness))
        let old = (1...3).map { "old-\($0)" }
        try BatchTests.dropBatch(harness, "swap", old.map { Self.line($0, "Old \($0)") })
        try waitUntil("the remote batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        let fresh = ["new-1", "new-2"]
        try BatchTests.dropBatch(harness, "swap", fresh.map { Self.line($0, "New \($0)", window: nil) })
        try waitUntil("the new file's batch ends", timeout: 60) {
            guard let summary = try? harness.json(harness.layout.batchSummary("swap")), summary["status"] as? String == "completed" else { return false }
            return !Syscall.isPresent(harness.layout.batchRequest("swap"))
        }
        let found = try expectOneLineEach(harness, "swap", fresh)
        for id in fresh { #expect(found[id]?["error"] is NSNull, "\(id)") }
        try waitUntil("the old group ends", timeout: 30) { remoteRecords(harness).isEmpty }
        let output = try String(contentsOfFile: harness.layout.batchOutput("swap"), encoding: .utf8)
        #expect(!output.contains("old-"), "no answer for the replaced file's lines in the new file's output")
        #expect(harness.log.contains("batch cancelled: the input was replaced by a newer file"))
        #expect(try BackgroundLaneTests().creations(harness).values.allSatisfy { $0 == 1 })
    }

    /// Deleting the input while its lines wait for their group (nothing sent yet): the
    /// lines, held by the lane as their offsets in that input, end as `batch_cancelled`
    /// and no remote batch is created for them.
    /// A batch file's lines that may wait are fed only while few wait in the lane's inbox
    /// (here 4, by the tests' variable, instead of 4,096): the feed waits and comes back
    /// as the lane takes them in, and the whole file still makes one group, one remote
    /// batch, every line answered from it and none live.
    @Test func aFeedPacedByTheLanesBacklogStillMakesOneRemoteBatch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        let count = 300
        try harness.startDaemon(config: config(harness, ["batch_linger_seconds": 600, "batch_max_requests": count]),
                                environment: [SpoolDaemon.laneBacklogVariable: "4"])
        let ids = (1...count).map { "p-\($0)" }
        try BatchTests.dropBatch(harness, "paced", ids.map { Self.line($0, "Paced \($0)") })
        let summary = try BatchTests.waitForSummary(harness, "paced", timeout: 120)
        #expect(summary["status"] as? String == "completed", "\(summary)")
        let found = try expectOneLineEach(harness, "paced", ids)
        let failed = ids.filter { found[$0]?["error"] is [String: Any] }
        #expect(failed.isEmpty, "every line answered: \(failed.prefix(5))")
        #expect(harness.log.contains("the batch's lines that may wait are fed as the background lane takes them in id=paced"), "the feed waited for the lane")
        let creations = try BackgroundLaneTests().creations(harness)
        #expect(creations.count == 1 && creations.values.allSatisfy { $0 == 1 }, "one group, created once: \(creations)")
        let live = try harness.stubArrivals().filter { $0.prompt.hasPrefix("Paced ") }
        #expect(live.isEmpty, "no line went live: \(live.prefix(3).map(\.prompt))")
    }

    @Test func deletingTheInputWhileItsLinesWaitCancelsThemAndSendsNothing() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: config(harness, ["batch_linger_seconds": 600]))
        let deferred = (1...3).map { "w-\($0)" }
        try BatchTests.dropBatch(harness, "waits", deferred.map { Self.line($0, "Waits \($0)") })
        try waitUntil("the lines wait in the lane", timeout: 30) {
            harness.log.components(separatedBy: "deferred to the background lane").count - 1 >= deferred.count
        }
        try Syscall.unlink(harness.layout.batchRequest("waits"))
        let summary = try BatchTests.waitForSummary(harness, "waits", timeout: 30)
        #expect(summary["status"] as? String == "cancelled", "\(summary)")
        let found = try expectOneLineEach(harness, "waits", deferred)
        for id in deferred {
            #expect((found[id]?["error"] as? [String: Any])?["code"] as? String == "batch_cancelled", "\(id): \(found[id] ?? [:])")
        }
        #expect(try BackgroundLaneTests().creations(harness).isEmpty, "nothing was sent for a batch that left")
        #expect(!harness.log.contains("group recorded"))
        for id in deferred { #expect(try harness.arrivals(of: "Waits \(id)").isEmpty) }
    }

    /// A line that alone passes `batch_max_bytes` leaves the lane for the live lane: its
    /// task is read back from its offsets in the input and answered live, while the
    /// batch's other line goes through the remote batch.
    @Test func aLineTooLargeForARemoteBatchIsReadBackAndAnsweredLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try harness.startDaemon(config: config(harness, ["batch_max_bytes": 1024]))
        let large = "Large " + String(repeating: "l", count: 1100)
        try BatchTests.dropBatch(harness, "sizes", [Self.line("big", large), Self.line("small", "Small one")])
        let summary = try BatchTests.waitForSummary(harness, "sizes", timeout: 60)
        #expect(summary["status"] as? String == "completed", "\(summary)")
        let found = try expectOneLineEach(harness, "sizes", ["big", "small"])
        for id in ["big", "small"] { #expect(found[id]?["error"] is NSNull, "\(id): \(found[id] ?? [:])") }
        #expect(harness.log.contains("the request alone passes batch_max_bytes; it goes live"))
        #expect(try harness.arrivals(of: large).count == 1, "answered live, once")
        #expect(try harness.arrivals(of: "Small one").isEmpty, "the small line went through the remote batch")
        #expect(try BackgroundLaneTests().creations(harness).values.allSatisfy { $0 == 1 })
    }
}
