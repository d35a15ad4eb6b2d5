import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// The background lane with the real daemon and the stub's Anthropic Message Batches:
/// Messages requests that may wait go through one message batch per group, each answered
/// once with the object a live Messages call returns, across kill -9 at the lane's steps,
/// a lost create answer, expiry and cancellation.
@Suite(.serialized) struct BackgroundLaneMessagesTests {
    let lane = BackgroundLaneTests()

    func config(_ harness: Harness, _ extra: [String: Any] = [:]) -> [String: Any] {
        var config = BackgroundLaneTests.lane
        config["endpoints"] = [["name": "messages-batch", "api": "anthropic", "base_url": harness.stubURL, "batch": true]]
        config.merge(extra) { $1 }
        return config
    }

    static let environment = ["ANTHROPIC_API_KEY": Harness.secret]

    static func deferrable(_ prompt: String, stub: [String: Any] = [:]) -> [String: Any] {
        var request = AnthropicMessagesTests.messages(prompt, stub: stub)
        request["completion_window"] = "24h"
        return request
    }

    func start(_ harness: Harness, _ extra: [String: Any] = [:], pause: String? = nil) throws {
        var environment = Self.environment
        if let pause { environment["LLMSPOOL_TEST_LANE_PAUSE"] = pause }
        try harness.startDaemon(config: config(harness, extra), environment: environment)
    }

    func groupRecord(_ harness: Harness) throws -> [String: Any] {
        let name = try #require(harness.files(in: harness.layout.remote).first { $0.hasSuffix(".json") })
        return try harness.json(harness.layout.remote + "/" + name)
    }

    /// The keys of a JSON object and, one level down, of its objects: the shape two results share.
    static func shape(_ object: [String: Any]) -> Set<String> {
        var keys = Set(object.keys)
        for (key, value) in object {
            if let inner = value as? [String: Any] { keys.formUnion(inner.keys.map { "\(key).\($0)" }) }
            if let list = value as? [[String: Any]], let first = list.first { keys.formUnion(first.keys.map { "\(key)[].\($0)" }) }
        }
        return keys
    }

    @Test func deferrableMessagesGoThroughOneMessageBatchAndAreTheLiveMessagesObject() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3"])
        try start(harness)
        let ids = ["m1", "m2", "m3"]
        for id in ids { try harness.drop(id, Self.deferrable("Deferred \(id)")) }
        try harness.drop("flaky", Self.deferrable("Errored line", stub: ["batch_line": "fail"]))
        try harness.drop("live", AnthropicMessagesTests.messages("Live message"))

        try waitUntil("the message batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        let shown = try harness.cli(["show", "m1", "--spool", harness.layout.root])
        let details = try #require(JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any], "\(shown.stderr)")
        #expect(details["lane"] as? String == "batch")
        #expect((details["waiting_for"] as? String)?.hasPrefix("deferred to batch msgbatch_") == true, "\(details)")

        try lane.waitForOutcomes(harness, ids + ["flaky", "live"])
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.files(in: harness.layout.failed))")
        try SDKJudge.expectParses("Message", (ids + ["flaky", "live"]).map { harness.layout.result($0) })

        let live = try harness.json(harness.layout.result("live"))
        for id in ids {
            let result = try harness.json(harness.layout.result(id))
            #expect(result["type"] as? String == "message")
            #expect(AnthropicMessagesTests.text(of: result)?.hasPrefix("Echo: Deferred \(id)") == true, "\(result)")
            #expect(Self.shape(result) == Self.shape(live), "the live Messages object's shape: \(Self.shape(result).symmetricDifference(Self.shape(live)))")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1)
            #expect(attempts.first?["lane"] as? String == "batch")
            #expect((attempts.first?["remote_batch"] as? String)?.hasPrefix("msgbatch_") == true, "\(attempts)")
            #expect(try harness.arrivals(of: "Deferred \(id)").isEmpty, "\(id) was answered by the batch")
        }
        // The errored line follows the retry rules (an api_error is retried) through the live lane.
        let flaky = try #require(try harness.record("flaky")["attempts"] as? [[String: Any]])
        #expect(flaky.count == 2 && flaky.first?["remote_batch"] != nil && flaky.last?["remote_batch"] == nil, "\(flaky)")
        #expect(flaky.last?["outcome"] as? String == "ok")
        #expect(try harness.arrivals(of: "Errored line").count == 1)
        #expect(try harness.arrivals(of: "Live message").count == 1)
        let made = try lane.creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "one group, created once: \(made)")
        #expect(harness.filesContainingSecret().isEmpty)

        // Tokens per lane: the batch's usage is counted apart, as for OpenAI.
        let shownStatus = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
        let batchTokens = try #require(JSONSerialization.jsonObject(with: Data(shownStatus.utf8)) as? [String: Any])["batch_tokens"] as? [String: Int] ?? [:]
        #expect(batchTokens.values.reduce(0, +) > 0, "\(shownStatus)")
    }

    @Test func aKillAfterTheCreateBeforeItsIdIsRecordedIsReconciledNotRepeated() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try start(harness, pause: "created")
        let ids = ["c1", "c2", "c3"]
        for id in ids { try harness.drop(id, Self.deferrable("Created \(id)")) }
        try waitUntil("the lane pauses after the create", timeout: 30) { harness.log.contains("lane test pause point=created") }
        let before = try groupRecord(harness)
        #expect(before["state"] as? String == "creating" && before["api"] as? String == "anthropic", "\(before)")
        #expect(before["batch_id"] is NSNull)
        harness.killDaemon()
        let group = try #require(before["group"] as? String)
        #expect(try lane.creations(harness) == [group: 1])
        try start(harness)
        try lane.waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("Message", ids.map { harness.layout.result($0) })
        #expect(try lane.creations(harness) == [group: 1], "the batch was found by its results' custom_ids, not created again")
        #expect(harness.log.contains("remote batch found by its group id, in the custom_ids of its results"))
        for id in ids { #expect(try harness.arrivals(of: "Created \(id)").isEmpty) }
    }

    @Test func aLostCreateAnswerIsReconciledNotRepeated() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "2", "--batch-faults", "create:429,create:lost"])
        try start(harness)
        let ids = ["l1", "l2"]
        for id in ids { try harness.drop(id, Self.deferrable("Lost \(id)")) }
        try lane.waitForOutcomes(harness, ids, timeout: 90)
        try SDKJudge.expectParses("Message", ids.map { harness.layout.result($0) })
        let made = try lane.creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "the 429 made nothing, the lost one was found: \(made)")
        #expect(harness.log.contains("the create's outcome is unknown"))
        #expect(harness.log.contains("remote batch found by its group id, in the custom_ids of its results"))
        for id in ids { #expect(try harness.arrivals(of: "Lost \(id)").isEmpty) }
    }

    /// A kill -9 at each of the lane's steps but the one after the create (above): after the
    /// intent is recorded, mid-create (the first member's body sent, the rest not), while
    /// polling, mid-download (part of the results on disk) and mid-split. Every request ends
    /// with exactly one result and one hook, and the stub counts one creation.
    @Test(arguments: ["intent", "uploading", "polled", "downloading", "split"])
    func aKillAtAStepEndsWithOneOutcomeEachAndOneBatch(point: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        let hooked = harness.root + "/hooked.log"
        let hook = ["/bin/sh", "-c", "echo \"$LLMSPOOL_STATUS $LLMSPOOL_ID\" >> \(hooked)"]
        try harness.startStub(["--batch-seconds", point == "polled" ? "3" : "1"])
        let settings: [String: Any] = ["on_complete": hook, "on_failure": hook]
        try start(harness, settings, pause: point)
        let ids = ["s1", "s2", "s3"]
        for id in ids { try harness.drop(id, Self.deferrable("Step \(point) \(id)")) }
        try waitUntil("the lane pauses at \(point)", timeout: 30) { harness.log.contains("lane test pause point=\(point)") }
        let record = try groupRecord(harness)
        let expected = ["intent": "intent", "uploading": "creating", "polled": "created", "downloading": "ended", "split": "split"][point]
        #expect(record["state"] as? String == expected, "\(point): the record at the kill: \(record)")
        if point == "downloading" {
            let group = try #require(record["group"] as? String)
            let cut = try Data(contentsOf: URL(fileURLWithPath: harness.layout.remote + "/" + group + ".output.jsonl"))
            #expect(!cut.isEmpty && cut.last != 0x0A, "results cut short are on disk at the kill")
        }
        let publishedBefore = ids.filter { Syscall.isPresent(harness.layout.result($0)) }
        #expect(publishedBefore.count == (point == "split" ? 1 : 0))
        if point == "split" {
            // A hook runs at least once: a kill before the daemon has seen it end (its note
            // still there) runs it again at the restart. The kill waits until it has ended
            // and its note is gone, so that each request's hook is counted once here.
            try waitUntil("the published request's hook ran and its note went", timeout: 30) {
                ((try? String(contentsOfFile: hooked, encoding: .utf8)) ?? "").split(separator: "\n").count >= 1
                    && publishedBefore.allSatisfy { id in !((try? Syscall.listDirectory(harness.layout.pendingHooks)) ?? []).contains { $0.hasPrefix(id + "@") } }
            }
        }
        harness.killDaemon()
        if point == "intent" || point == "uploading" {
            #expect(try lane.creations(harness).isEmpty, "\(point): no message batch existed at the kill")
        }
        try start(harness, settings)
        try lane.waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("Message", ids.map { harness.layout.result($0) })
        try waitUntil("every hook ran", timeout: 20) {
            ((try? String(contentsOfFile: hooked, encoding: .utf8)) ?? "").split(separator: "\n").count >= ids.count
        }
        let lines = try String(contentsOfFile: hooked, encoding: .utf8).split(separator: "\n").map(String.init).sorted()
        #expect(lines == ids.map { "done \($0)" }, "one outcome each: \(lines)")
        for id in ids {
            #expect(try harness.arrivals(of: "Step \(point) \(id)").isEmpty, "\(id) was answered by the batch")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1, "\(id): \(attempts)")
        }
        let made = try lane.creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "\(point): one group, created once: \(made)")
    }

    /// One Anthropic batch line (`{"custom_id", "params"}`); such a line has no window of its
    /// own, so the config's `default_completion_window` makes it deferrable.
    static func anthropicLine(_ id: String, _ prompt: String, stream: Bool = false, stub: [String: Any] = [:]) -> String {
        let params = AnthropicMessagesTests.messages(prompt, stream: stream, stub: stub)["body"] ?? [:]
        let object: [String: Any] = ["custom_id": id, "params": params]
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// The message of an Anthropic output line that succeeded.
    static func message(of line: [String: Any]?) -> [String: Any]? {
        (line?["result"] as? [String: Any])?["message"] as? [String: Any]
    }

    /// A `.jsonl` batch of Anthropic lines, deferrable by the config's default window: the
    /// lines go through one message batch (a streamed one, which a batch cannot give, live),
    /// and come back as the batch's output lines in Anthropic's shape, each a
    /// `MessageBatchIndividualResponse` whose message is a `Message`. The lines' tokens are
    /// counted per lane, in the metrics and in `status`: the batch's apart from the live ones'.
    @Test func anAnthropicBatchFilesLinesGoThroughOneMessageBatchInAnthropicsShapeAndTheirTokensPerLane() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3"])
        try harness.startDaemon(config: config(harness, ["default_completion_window": "24h", "max_attempts": 2]),
                                arguments: ["--metrics", "127.0.0.1:0"], environment: Self.environment)
        let deferred = (1...4).map { "a-\($0)" }
        var lines = deferred.map { Self.anthropicLine($0, "Batched \($0)") }
        lines.append(Self.anthropicLine("streamed", "Streamed live", stream: true))
        // An errored line (an api_error) is retried live; an expired one goes live (deferred_expired: live).
        lines.append(Self.anthropicLine("flaky", "Remote errored", stub: ["batch_line": "fail"]))
        lines.append(Self.anthropicLine("late", "Remote expired", stub: ["batch_line": "expire"]))
        let live = ["streamed", "flaky", "late"]
        let ids = deferred + live
        try BatchTests.dropBatch(harness, "messages", lines.shuffled())

        try waitUntil("the message batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        #expect(!Syscall.isPresent(harness.layout.batchSummary("messages")), "the batch runs on while its deferred lines wait")
        let summary = try BatchTests.waitForSummary(harness, "messages", timeout: 90)
        #expect(summary["status"] as? String == "completed", "\(summary)")
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["total"] as? Int == ids.count && counts["completed"] as? Int == ids.count, "\(counts)")
        let path = harness.layout.batchOutput("messages")
        let output = try BatchTests.outputLines(path)
        #expect(output.count == ids.count, "one output line per input line: \(output.count) for \(ids.count)")
        let found = BatchTests.byID(output)
        #expect(Set(found.keys) == Set(ids), "\(found.keys.sorted())")
        try SDKJudge.expectParses("MessageBatchIndividualResponse", [path], jsonl: true)
        let messages = try ids.map { id -> String in
            let line = found[id]
            #expect((line?["result"] as? [String: Any])?["type"] as? String == "succeeded", "\(id): \(line ?? [:])")
            #expect(line?["id"] == nil && line?["response"] == nil, "\(id): Anthropic's shape, not OpenAI's: \(line ?? [:])")
            return String(decoding: try JSONSerialization.data(withJSONObject: Self.message(of: line) ?? [:]), as: UTF8.self)
        }
        try Data((messages.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: harness.root + "/messages.jsonl"))
        try SDKJudge.expectParses("Message", [harness.root + "/messages.jsonl"], jsonl: true)
        for id in deferred {
            #expect(AnthropicMessagesTests.text(of: Self.message(of: found[id]) ?? [:])?.hasPrefix("Echo: Batched \(id)") == true,
                    "\(id) got another line's answer: \(found[id] ?? [:])")
            #expect(try harness.arrivals(of: "Batched \(id)").isEmpty, "\(id) was answered by the message batch")
        }
        for prompt in ["Streamed live", "Remote errored", "Remote expired"] {
            #expect(try harness.arrivals(of: prompt).count == 1, "\(prompt): sent live once")
        }
        let made = try lane.creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "one group, created once: \(made)")

        // Tokens per lane: the lines the message batch answered count for the batch lane,
        // the others (the streamed one, and the two retried live) for the live lane.
        func inputTokens(_ chosen: [String]) -> Int {
            chosen.reduce(0) { $0 + ((Self.message(of: found[$1])?["usage"] as? [String: Any])?["input_tokens"] as? Int ?? 0) }
        }
        let batchInput = inputTokens(deferred)
        let liveInput = inputTokens(live)
        #expect(batchInput > 0 && liveInput > 0)
        let port = try harness.metricsPort()
        var metrics = ""
        try waitUntil("the lanes' tokens are counted", timeout: 10) {
            metrics = String(decoding: try LoopbackGet.body(port: port, path: "/metrics"), as: UTF8.self)
            return metrics.contains("llmspool_lane_tokens_total{lane=\"batch\",kind=\"input\"} \(batchInput)\n")
        }
        #expect(metrics.contains("llmspool_lane_tokens_total{lane=\"batch\",kind=\"input\"} \(batchInput)\n"), "\(metrics)")
        #expect(metrics.contains("llmspool_lane_tokens_total{lane=\"live\",kind=\"input\"} \(liveInput)\n"), "\(metrics)")
        var shown: [String: Any] = [:]
        try waitUntil("status counts the lines' tokens per lane", timeout: 10) {
            let text = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
            shown = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
            return (shown["batch_tokens"] as? [String: Int])?["input_tokens"] == batchInput
        }
        #expect((shown["batch_tokens"] as? [String: Int])?["input_tokens"] == batchInput, "\(shown)")
        #expect((shown["tokens"] as? [String: Int])?["input_tokens"] == batchInput + liveInput, "\(shown)")
        let text = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(text.contains("of which through the background lane (batch rate):"), "\(text)")
        try waitUntil("the lane's records are gone", timeout: 20) {
            harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty
        }
    }

    /// A kill -9 at the lane's steps of a message batch carrying a `.jsonl` batch's
    /// Anthropic lines: after the intent is recorded (nothing remote: the lines are grouped
    /// again as the runner feeds them), mid-create, mid-download and mid-split (one line's
    /// outcome committed to the batch's output, the others not). After the restart the
    /// batch resumes from its journal, a create made again waits for the lines its runner
    /// feeds again (none is left out of it), and every line ends with one output line,
    /// answered by the one message batch.
    @Test(arguments: ["intent", "uploading", "downloading", "split"])
    func aKillCarryingAnAnthropicBatchFileEndsWithOneLinePerCustomIDAndOneMessageBatch(point: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        let settings = config(harness, ["default_completion_window": "24h"])
        try harness.startDaemon(config: settings, environment: Self.environment.merging(["LLMSPOOL_TEST_LANE_PAUSE": point]) { $1 })
        let ids = (1...5).map { "j-\($0)" }
        try BatchTests.dropBatch(harness, "carried", ids.map { Self.anthropicLine($0, "Carried \(point) \($0)") })
        try waitUntil("the lane pauses at \(point)", timeout: 30) { harness.log.contains("lane test pause point=\(point)") }
        let record = try groupRecord(harness)
        let expected = ["intent": "intent", "uploading": "creating", "downloading": "ended", "split": "split"][point]
        #expect(record["state"] as? String == expected, "\(point): the record at the kill: \(record)")
        if point == "split" {
            // The first line's outcome went to the batch runner, which commits it with its next group.
            try waitUntil("the handed-over line is committed", timeout: 20) {
                let text = (try? String(contentsOfFile: harness.layout.batchPartial("carried"), encoding: .utf8)) ?? ""
                return ids.contains { text.contains("\"custom_id\":\"\($0)\"") }
            }
        }
        harness.killDaemon()
        let remoteBefore = point == "intent" || point == "uploading" ? 0 : 1
        #expect(try lane.creations(harness).values.reduce(0, +) == remoteBefore, "\(point): message batches at the kill")
        if point == "uploading" {
            // A large batch that is refused at its last line, there at the restart: while the
            // batch thread validates it, the carried batch's lines are not fed again, and the
            // lane, finding no message batch of the group, makes its create meanwhile.
            let filler = String(repeating: "x", count: 2000)
            try BatchTests.dropBatch(harness, "blocker", (0..<2000).map { Self.anthropicLine("b-\($0)", "Blocker \($0) \(filler)") } + ["{not json"])
        }
        try harness.startDaemon(config: settings, environment: Self.environment)
        let summary = try BatchTests.waitForSummary(harness, "carried", timeout: 90)
        #expect(summary["status"] as? String == "completed", "\(summary)")
        let path = harness.layout.batchOutput("carried")
        let output = try BatchTests.outputLines(path)
        #expect(output.count == ids.count, "one output line per input line: \(output.count)")
        let found = BatchTests.byID(output)
        #expect(Set(found.keys) == Set(ids))
        try SDKJudge.expectParses("MessageBatchIndividualResponse", [path], jsonl: true)
        for id in ids {
            #expect(AnthropicMessagesTests.text(of: Self.message(of: found[id]) ?? [:])?.hasPrefix("Echo: Carried \(point) \(id)") == true,
                    "\(id): \(found[id] ?? [:])")
            #expect(try harness.arrivals(of: "Carried \(point) \(id)").isEmpty, "\(id) was answered by the message batch, not live")
        }
        let made = try lane.creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "\(point): one group, created once: \(made)")
        let log = harness.log
        if point == "uploading", let refused = log.range(of: "batch refused id=blocker"), let resumed = log.range(of: "batch resumed id=carried"),
           refused.lowerBound < resumed.lowerBound {
            // The blocker was validated first (the watcher's order): the create came before
            // the lines, and waited for them rather than leave them out.
            #expect(log.contains("is not found again yet; the create waits for it"), "the create waited for the lines")
        }
        #expect(!log.contains("no request of the group is left to create its batch"))
        try waitUntil("the lane's records are gone", timeout: 20) {
            harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty
        }
    }

    @Test func anExpiredLineGoesToTheLiveLane() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try start(harness, ["max_attempts": 1])
        try harness.drop("ran", Self.deferrable("Expiry ran"))
        try harness.drop("late", Self.deferrable("Expiry late", stub: ["batch_line": "expire"]))
        try lane.waitForOutcomes(harness, ["ran", "late"])
        try SDKJudge.expectParses("Message", [harness.layout.result("ran"), harness.layout.result("late")])
        #expect(try harness.arrivals(of: "Expiry ran").isEmpty, "its answer came from the batch")
        #expect(try harness.arrivals(of: "Expiry late").count == 1, "the expired one went live once")
        let attempts = try #require(try harness.record("late")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["outcome"] as? String } == ["expired", "ok"], "\(attempts)")
        #expect((attempts.first?["remote_batch"] as? String)?.hasPrefix("msgbatch_") == true)
        #expect(try lane.creations(harness).values.reduce(0, +) == 1)
    }

    @Test func deletingBeforeTheGroupIsSentOrEveryMemberAfterCancelsIt() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let hooked = harness.root + "/hooked.log"
        let hook = ["/bin/sh", "-c", "echo \"$LLMSPOOL_STATUS $LLMSPOOL_ID\" >> \(hooked)"]
        try harness.startStub(["--batch-seconds", "3600"])
        try start(harness, ["batch_linger_seconds": 3, "on_complete": hook, "on_failure": hook])
        try harness.drop("early", Self.deferrable("Deleted early"))
        try waitUntil("the request is deferred", timeout: 20) { harness.log.contains("deferred to the background lane id=early") }
        try Syscall.unlink(harness.layout.request("early"))
        try waitUntil("its withdrawal is recorded", timeout: 20) { (try? harness.record("early"))?["status"] as? String == "cancelled" }
        #expect(try lane.creations(harness).isEmpty, "the group was never sent")

        for id in ["x1", "x2"] { try harness.drop(id, Self.deferrable("Cancel \(id)")) }
        try waitUntil("the message batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        let group = try #require(try lane.creations(harness).keys.first)
        // The poll's counts reach `status` from the live status file, as an OpenAI batch's do.
        try waitUntil("status shows the message batch's counts", timeout: 30) {
            let shown = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
            let remote = (try JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: Any])?["remote_batches"] as? [[String: Any]] ?? []
            let text = try harness.cli(["status", "--spool", harness.layout.root]).stdout
            return remote.count == 1 && (remote.first?["request_counts"] as? [String: Any])?["total"] as? Int == 2
                && (remote.first?["batch_id"] as? String)?.hasPrefix("msgbatch_") == true && text.contains("(in_progress, 0 of 2 completed, 0 failed)")
        }
        try Syscall.unlink(harness.layout.request("x1"))
        try waitUntil("the first deletion is seen", timeout: 20) { harness.log.contains("a member of a sent group was deleted id=x1") }
        #expect(try lane.cancelledGroups(harness).isEmpty, "one member is left: the batch runs on")
        try Syscall.unlink(harness.layout.request("x2"))
        try waitUntil("the batch is cancelled and the group ends", timeout: 30) {
            (try? self.lane.cancelledGroups(harness)) == [group] && harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty
        }
        for id in ["early", "x1", "x2"] {
            #expect(!Syscall.isPresent(harness.layout.result(id)) && !Syscall.isPresent(harness.layout.errorRecord(id)))
            #expect(try harness.record(id)["status"] as? String == "cancelled")
        }
        #expect(!Syscall.isPresent(hooked), "no hook for a discarded answer")
        #expect(try lane.creations(harness) == [group: 1])
    }

    static let hostileEndpoint = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("hostile/message_batches.py").path

    /// Everything a Message Batches endpoint can get wrong at once (`Tests/hostile/message_batches.py`):
    /// a lost create, a list whose page loops, a stranger's batch of the group's size, an
    /// unknown status, absurd counts, a `results_url` elsewhere, and results with an unknown
    /// custom_id, another group's, a repeated one, one past the members and a last line cut
    /// short. The daemon lives, creates once, publishes each member once (the first line of
    /// its own, else live) and sends the key nowhere but the endpoint's own paths.
    @Test func aHostileMessageBatchesEndpointNeitherCrashesTheDaemonNorPublishesTwice() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let port = try LiteLLMProxyTests.freePort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = [Self.hostileEndpoint, "\(port)"]
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        defer {
            // SIGKILL: a signal the test process ignores is ignored by its children too.
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        func state() throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: LoopbackGet.body(port: port, path: "/hostile/state")) as? [String: Any])
        }
        try waitUntil("the hostile endpoint listens", timeout: 10) { (try? state()) != nil }
        try harness.startDaemon(config: BackgroundLaneTests.lane.merging(["endpoints": [["name": "evil", "api": "anthropic", "base_url": "http://127.0.0.1:\(port)", "batch": true]]]) { $1 },
                                environment: Self.environment)
        let ids = ["h0", "h1", "h2"]
        for id in ids { try harness.drop(id, Self.deferrable("Hostile \(id)")) }
        try lane.waitForOutcomes(harness, ids, timeout: 90)
        #expect(harness.daemonIsRunning)
        try SDKJudge.expectParses("Message", ids.map { harness.layout.result($0) })
        #expect(AnthropicMessagesTests.text(of: try harness.json(harness.layout.result("h0"))) == "first of member 0", "the first line of the member, once")
        for id in ["h1", "h2"] {
            #expect(AnthropicMessagesTests.text(of: try harness.json(harness.layout.result(id))) == "live Hostile \(id)", "\(id): no readable line of its own, so live")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["outcome"] as? String } == ["transport", "ok"], "\(attempts)")
        }
        let seen = try state()
        #expect(seen["creates"] as? Int == 1, "the lost create was adopted, the looping list made no second: \(seen["creates"] ?? "")")
        #expect((seen["live"] as? [String])?.sorted() == ["Hostile h1", "Hostile h2"])
        #expect(seen["stolen"] == nil, "the results_url of the answer is never fetched")
        for problem in ["repeats itself", "is not one of group", "(of group gother0000000000)", "names no member: the group has 3", "not JSON"] {
            #expect(harness.log.contains(problem), "logged: \(problem)")
        }
    }
}
