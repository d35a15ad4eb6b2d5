import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// The background lane with the real daemon and the stub's Files and Batches API: requests
/// that may wait go through one remote batch per group, each answered exactly once, across
/// kill -9 at the lane's steps and the API's faults.
@Suite(.serialized) struct BackgroundLaneTests {
    static var lane: [String: Any] { ["batch_linger_seconds": 0.5, "batch_poll_seconds": 1, "batch_poll_max_seconds": 2] }

    func config(_ harness: Harness, _ extra: [String: Any] = [:]) -> [String: Any] {
        var config = Self.lane
        config["endpoints"] = [["name": "batchy", "base_url": harness.stubURL, "batch": true]]
        config.merge(extra) { $1 }
        return config
    }

    static func deferrable(_ id: String, _ prompt: String, stub: [String: Any]? = nil) -> [String: Any] {
        ["custom_id": id, "url": "/v1/chat/completions", "completion_window": "24h", "body": Harness.request(prompt, stub: stub)]
    }

    func creations(_ harness: Harness) throws -> [String: Int] {
        try stubBatches(harness)["creations"] as? [String: Int] ?? [:]
    }

    /// The groups whose remote batch the stub saw cancelled.
    func cancelledGroups(_ harness: Harness) throws -> [String] {
        try stubBatches(harness)["cancelled"] as? [String] ?? []
    }

    func stubBatches(_ harness: Harness) throws -> [String: Any] {
        let port = try #require(UInt16(harness.stubURL.split(separator: ":").last?.split(separator: "/").first ?? ""))
        return try JSONSerialization.jsonObject(with: LoopbackGet.body(port: port, path: "/stub/batches")) as? [String: Any] ?? [:]
    }

    /// Waits until every id has exactly one outcome, in incoming or failed, and the
    /// lane's records are gone.
    func waitForOutcomes(_ harness: Harness, _ ids: [String], timeout: TimeInterval = 60) throws {
        try waitUntil("every request has its outcome and the lane is done", timeout: timeout) {
            // The request leaves outgoing just after its outcome appears: wait for both.
            let done = ids.allSatisfy {
                (Syscall.isPresent(harness.layout.result($0)) || Syscall.isPresent(harness.layout.errorRecord($0))) && !Syscall.isPresent(harness.layout.request($0))
            }
            let records = harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }
            return done && records.isEmpty
        }
        for id in ids {
            #expect(Syscall.isPresent(harness.layout.result(id)) != Syscall.isPresent(harness.layout.errorRecord(id)), "\(id): one outcome")
            #expect(!Syscall.isPresent(harness.layout.request(id)), "\(id) left outgoing")
        }
    }

    @Test func deferrableRequestsGoThroughOneRemoteBatchAndParseAsChatCompletions() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "4"])
        try harness.startDaemon(config: config(harness), arguments: ["--metrics", "127.0.0.1:0"])
        let ids = ["d1", "d2", "d3"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Deferred \(id)")) }
        try harness.drop("refused", Self.deferrable("refused", "Refused one", stub: ["status": 400]))
        try harness.drop("live", ["custom_id": "live", "url": "/v1/chat/completions", "body": Harness.request("Live one")])

        // While the provider runs it, status and show name the remote batch.
        try waitUntil("the remote batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        let shown = try harness.cli(["show", "d1", "--spool", harness.layout.root])
        let details = try #require(JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any], "\(shown.stderr)")
        #expect(details["lane"] as? String == "batch")
        #expect((details["waiting_for"] as? String)?.hasPrefix("deferred to batch batch_") == true, "\(details)")
        let status = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(status.contains("remote batches:") && status.contains("4 requests deferred to batch batch_"), "\(status)")

        try waitForOutcomes(harness, ids + ["refused", "live"])

        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) } + [harness.layout.result("live")])
        for id in ids {
            let result = try harness.json(harness.layout.result(id))
            #expect(Harness.content(of: result)?.hasPrefix("Echo: Deferred \(id)") == true)
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1)
            #expect(attempts.first?["lane"] as? String == "batch")
            #expect((attempts.first?["remote_batch"] as? String)?.hasPrefix("batch_") == true)
            #expect((attempts.first?["request_id"] as? String)?.hasPrefix("req_") == true, "the batch line's request_id: \(attempts)")
        }
        let live = try #require(try harness.record("live")["attempts"] as? [[String: Any]])
        #expect(live.first?["request_id"] as? String == "req_stub_1" && live.first?["lane"] == nil, "\(live)")
        let refusal = try harness.json(harness.layout.errorRecord("refused"))
        #expect(refusal["kind"] as? String == "http")
        #expect(refusal["http_status"] as? Int == 400)
        #expect(Syscall.isPresent(harness.layout.failed + "/refused.json"))

        // Only the live request reached the chat path; the others went in one batch.
        #expect(try harness.arrivals(of: "Live one").count == 1)
        for id in ids { #expect(try harness.arrivals(of: "Deferred \(id)").isEmpty) }
        let made = try creations(harness)
        #expect(made.count == 1 && made.values.allSatisfy { $0 == 1 }, "one group, created once: \(made)")
        #expect(harness.filesContainingSecret().isEmpty)

        // Tokens per lane: the three deferred answers' usage apart from the live one's,
        // in status (from the daemon's counts, and from the records alone) and the metrics.
        let usage = try ids.map { try #require(try harness.json(harness.layout.result($0))["usage"] as? [String: Any]) }
        let batchPrompt = usage.reduce(0) { $0 + ($1["prompt_tokens"] as? Int ?? 0) }
        let livePrompt = try #require(try harness.json(harness.layout.result("live"))["usage"] as? [String: Any])["prompt_tokens"] as? Int ?? 0
        #expect(batchPrompt > 0 && livePrompt > 0)
        let port = try harness.metricsPort()
        var metrics = ""
        try waitUntil("the lanes' tokens are counted", timeout: 10) {
            metrics = String(decoding: try LoopbackGet.body(port: port, path: "/metrics"), as: UTF8.self)
            return metrics.contains("llmspool_lane_tokens_total{lane=\"batch\",kind=\"prompt\"} \(batchPrompt)\n")
        }
        #expect(metrics.contains("llmspool_lane_tokens_total{lane=\"live\",kind=\"prompt\"} \(livePrompt)\n"), "\(metrics)")
        func batchTokens() throws -> [String: Int] {
            let shown = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
            return try #require(JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: Any])["batch_tokens"] as? [String: Int] ?? [:]
        }
        try waitUntil("status counts the batch lane's tokens", timeout: 10) { (try? batchTokens())?["prompt_tokens"] == batchPrompt }
        harness.stopDaemon()
        #expect(try batchTokens()["prompt_tokens"] == batchPrompt, "from the records alone")
        #expect(try harness.cli(["status", "--spool", harness.layout.root]).stdout.contains("of which through the background lane (batch rate):"))
    }

    @Test func aKillAfterTheIntentIsRecordedEndsWithOneOutcomeEachAndOneBatch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try harness.startDaemon(config: config(harness), environment: ["LLMSPOOL_TEST_LANE_PAUSE": "intent"])
        let ids = ["k1", "k2"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Kill \(id)")) }
        try waitUntil("the lane pauses after recording the intent", timeout: 30) { harness.log.contains("lane test pause point=intent") }
        #expect(harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.count == 1)
        harness.killDaemon()
        #expect(try creations(harness).isEmpty, "nothing remote existed at the kill")
        try harness.startDaemon(config: config(harness))
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        let made = try creations(harness)
        #expect(made.values.reduce(0, +) == 1, "one remote batch in all: \(made)")
    }

    @Test func aKillAfterTheCreateBeforeItsIdIsRecordedIsReconciledNotRepeated() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try harness.startDaemon(config: config(harness), environment: ["LLMSPOOL_TEST_LANE_PAUSE": "created"])
        let ids = ["c1", "c2", "c3"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Created \(id)")) }
        try waitUntil("the lane pauses after the create", timeout: 30) { harness.log.contains("lane test pause point=created") }
        let record = try #require(harness.files(in: harness.layout.remote).first { $0.hasSuffix(".json") })
        let before = try harness.json(harness.layout.remote + "/" + record)
        #expect(before["state"] as? String == "uploaded")
        #expect(before["batch_id"] is NSNull)
        harness.killDaemon()
        let group = try #require(before["group"] as? String)
        #expect(try creations(harness) == [group: 1])
        try harness.startDaemon(config: config(harness))
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        #expect(try creations(harness) == [group: 1], "the batch was found by its group id, not created again")
        #expect(harness.log.contains("remote batch found by its group id"))
    }

    /// A kill -9 at each remaining step of a group's life (`LLMSPOOL_TEST_LANE_PAUSE` holds
    /// the lane there): mid-upload, while polling, mid-download, mid-split. Every request
    /// ends with one outcome (one result, one hook), and the stub counts one creation.
    @Test(arguments: ["uploading", "polled", "downloading", "split"])
    func aKillAtAStepEndsWithOneOutcomeEachAndOneBatch(point: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        let hooked = harness.root + "/hooked.log"
        let hook = ["/bin/sh", "-c", "echo \"$LLMSPOOL_STATUS $LLMSPOOL_ID\" >> \(hooked)"]
        try harness.startStub(["--batch-seconds", point == "polled" ? "3" : "1"])
        let settings = config(harness, ["on_complete": hook, "on_failure": hook])
        try harness.startDaemon(config: settings, environment: ["LLMSPOOL_TEST_LANE_PAUSE": point])
        let ids = ["s1", "s2", "s3"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Step \(point) \(id)")) }
        try waitUntil("the lane pauses at \(point)", timeout: 30) { harness.log.contains("lane test pause point=\(point)") }
        let record = try #require(harness.files(in: harness.layout.remote).first { $0.hasSuffix(".json") })
        let state = try harness.json(harness.layout.remote + "/" + record)["state"] as? String
        let expected = ["uploading": "intent", "polled": "created", "downloading": "ended", "split": "split"][point]
        #expect(state == expected, "\(point): the record at the kill")
        if point == "downloading" {
            let output = harness.layout.remote + "/" + record.replacingOccurrences(of: ".json", with: ".output.jsonl")
            let cut = try Data(contentsOf: URL(fileURLWithPath: output))
            #expect(!cut.isEmpty && cut.last != 0x0A, "a download cut short is on disk at the kill")
        }
        let publishedBefore = ids.filter { Syscall.isPresent(harness.layout.result($0)) }
        #expect(publishedBefore.count == (point == "split" ? 1 : 0), "\(publishedBefore)")
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
        try harness.startDaemon(config: settings)
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
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
        let made = try creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "\(point): one group, created once: \(made)")
    }

    /// A daemon of the earlier record form (each member's request identity inline, no
    /// `request_files`) killed while polling: the new daemon resumes its record, polls the
    /// same remote batch, and every request ends once, from it.
    @Test func aRecordInTheEarlierFormIsResumedAfterAnUpgrade() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3"])
        let settings = config(harness)
        try harness.startDaemon(config: settings, environment: ["LLMSPOOL_TEST_LANE_PAUSE": "polled"])
        let ids = ["u1", "u2", "u3"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Upgrade \(id)")) }
        try waitUntil("the lane pauses while polling", timeout: 30) { harness.log.contains("lane test pause point=polled") }
        harness.killDaemon()
        let name = try #require(harness.files(in: harness.layout.remote).first { $0.hasSuffix(".json") })
        let path = harness.layout.remote + "/" + name
        var record = try harness.json(path)
        let files = try #require(record.removeValue(forKey: "request_files") as? [[String: Any]])
        let members = try #require(record["members"] as? [[String: Any]])
        record["members"] = try members.map { member -> [String: Any] in
            var old = member
            let place = try #require(old.removeValue(forKey: "request_file") as? Int)
            old["request"] = files[place]
            return old
        }
        try JSONSerialization.data(withJSONObject: record).write(to: URL(fileURLWithPath: path))
        #expect(!(try String(contentsOfFile: path, encoding: .utf8)).contains("request_file"))
        try harness.startDaemon(config: settings)
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        for id in ids { #expect(try harness.arrivals(of: "Upgrade \(id)").isEmpty, "\(id) was answered by the batch") }
        let made = try creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "one group, created once: \(made)")
        #expect(!harness.log.contains("cannot be read"))
    }

    @Test func uploadAndCreateFaultsAndALostCreateEndWithOneBatch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "upload:500,upload:429,create:429,create:500,create:lost"])
        try harness.startDaemon(config: config(harness))
        let ids = ["f1", "f2"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Fault \(id)")) }
        try waitForOutcomes(harness, ids, timeout: 90)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        let made = try creations(harness)
        // The 500 and the lost create may each have committed: only the lost one did (the
        // stub's 500 changes nothing), and it was found by listing, never created again.
        #expect(made.count == 1 && made.values.first == 1, "\(made)")
        #expect(harness.log.contains("the create's outcome is unknown"))
    }

    @Test func withoutABatchEndpointADeferrableRequestGoesLiveOrFailsAsAsked() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: Self.lane)
        try harness.drop("fallback", Self.deferrable("fallback", "Falls back"))
        try waitForOutcomes(harness, ["fallback"])
        try SDKJudge.expectParses("ChatCompletion", [harness.layout.result("fallback")])
        #expect(try harness.arrivals(of: "Falls back").count == 1)
        harness.stopDaemon()

        var strict = Self.lane
        strict["deferred_fallback"] = "fail"
        try harness.startDaemon(config: strict)
        try harness.drop("strict", Self.deferrable("strict", "Must wait"))
        try waitForOutcomes(harness, ["strict"])
        let record = try harness.json(harness.layout.errorRecord("strict"))
        #expect(record["kind"] as? String == "no-endpoint")
        #expect((record["message"] as? String)?.contains("deferred_fallback is fail") == true)
        #expect(try harness.arrivals(of: "Must wait").isEmpty)
    }

    @Test func deletingARequestBeforeItsGroupIsSentOrAfterDiscardsItsAnswer() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let hooked = harness.root + "/hooked.log"
        let hook = ["/bin/sh", "-c", "echo \"$LLMSPOOL_STATUS $LLMSPOOL_ID\" >> \(hooked)"]
        try harness.startStub(["--batch-seconds", "3"])
        try harness.startDaemon(config: config(harness, ["batch_linger_seconds": 4, "on_complete": hook, "on_failure": hook]))
        try harness.drop("early", Self.deferrable("early", "Deleted early"))
        try waitUntil("the request is deferred", timeout: 20) { harness.log.contains("deferred to the background lane id=early") }
        try Syscall.unlink(harness.layout.request("early"))
        try waitUntil("its withdrawal is recorded", timeout: 20) { (try? harness.record("early"))?["status"] as? String == "cancelled" }

        for id in ["kept", "late"] { try harness.drop(id, Self.deferrable(id, "Member \(id)")) }
        try waitUntil("the remote batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        try Syscall.unlink(harness.layout.request("late"))
        try waitForOutcomes(harness, ["kept"])
        try SDKJudge.expectParses("ChatCompletion", [harness.layout.result("kept")])
        #expect(!Syscall.isPresent(harness.layout.result("late")), "a deleted member's answer is discarded")
        #expect(!Syscall.isPresent(harness.layout.result("early")))
        #expect(try harness.record("late")["status"] as? String == "cancelled")
        try waitUntil("the kept member's hook ran", timeout: 20) { (try? String(contentsOfFile: hooked, encoding: .utf8))?.contains("done kept") == true }
        let hooks = try String(contentsOfFile: hooked, encoding: .utf8)
        #expect(!hooks.contains("late") && !hooks.contains("early"), "no hook for a discarded answer: \(hooks)")
        let made = try creations(harness)
        #expect(made.values.reduce(0, +) == 1, "the first group was never sent: \(made)")
    }

    /// A request answered live, then a newer file under its name that may wait, deleted
    /// while it waits in the lane: the newer one is withdrawn (cancelled), the first one's
    /// record and result stand, nothing is sent for it.
    @Test func aNewerFileUnderAFinishedNameDeletedInTheLaneIsCancelled() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3"])
        try harness.startDaemon(config: config(harness, ["batch_linger_seconds": 600]))
        try harness.drop("again", Harness.request("Live first"))
        try waitUntil("the first is answered", timeout: 20) { (try? harness.record("again"))?["status"] as? String == "done" }
        try harness.drop("again", Self.deferrable("again", "Waits second"))
        try waitUntil("the newer file is deferred", timeout: 20) { harness.log.contains("deferred to the background lane id=again") }
        try Syscall.unlink(harness.layout.request("again"))
        try waitUntil("the newer file is withdrawn", timeout: 20) {
            harness.log.contains("cancelled: the request was removed before it started id=again")
        }
        #expect(try harness.arrivals(of: "Waits second").isEmpty)
        #expect(try creations(harness).isEmpty, "no group was sent")
        #expect((try? harness.record("again"))?["status"] as? String == "done", "the first one's end stands")
        #expect(Harness.content(of: try harness.json(harness.layout.result("again"))) == StubAnswer.content(prompt: "Live first", tokens: 8))
    }

    /// A batch that ends `expired`: the line that ran is published from the batch; the
    /// lines that expired (listed or not) go live at once, and a line that failed is
    /// retried through the live lane by the usual rules.
    @Test func anExpiredBatchSendsItsUnansweredMembersLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-ending", "expired"])
        try harness.startDaemon(config: config(harness, ["max_attempts": 1]))
        try harness.drop("ran", Self.deferrable("ran", "Expiry ran"))
        try harness.drop("listed", Self.deferrable("listed", "Expiry listed", stub: ["batch_line": "expire"]))
        try harness.drop("unlisted", Self.deferrable("unlisted", "Expiry unlisted", stub: ["batch_line": "omit"]))
        let ids = ["ran", "listed", "unlisted"]
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        #expect(try harness.arrivals(of: "Expiry ran").isEmpty, "its answer came from the batch")
        for id in ["listed", "unlisted"] {
            #expect(try harness.arrivals(of: "Expiry \(id)").count == 1, "\(id) went live once")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["outcome"] as? String } == ["expired", "ok"], "\(id): \(attempts)")
            #expect((attempts.first?["remote_batch"] as? String)?.hasPrefix("batch_") == true)
            #expect(attempts.last?["remote_batch"] == nil, "the second attempt was live")
        }
        #expect(try creations(harness).values.reduce(0, +) == 1)
    }

    /// A batch that ends `failed` (the provider refused its input whole; no output or error
    /// file): every member goes live untouched, once each, and no second batch is created.
    @Test func aFailedBatchSendsEveryMemberLiveOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-ending", "failed"])
        try harness.startDaemon(config: config(harness, ["max_attempts": 1]))
        let ids = ["first", "second"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Refused \(id)")) }
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        for id in ids {
            #expect(try harness.arrivals(of: "Refused \(id)").count == 1, "\(id) went live once")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.last?["outcome"] as? String == "ok", "\(id): \(attempts)")
            #expect(attempts.last?["remote_batch"] == nil, "\(id): its answer came from the live lane")
        }
        #expect(try creations(harness).values.reduce(0, +) == 1, "one batch created, none again")
    }

    /// A create refused with a 400 (the provider takes none of it): nothing remote exists,
    /// and the group's requests go live untouched, each once.
    @Test func aCreateRefusedSendsTheGroupLiveOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "create:400"])
        try harness.startDaemon(config: config(harness))
        let ids = ["r1", "r2"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Create refused \(id)")) }
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        for id in ids {
            #expect(try harness.arrivals(of: "Create refused \(id)").count == 1, "\(id) went live once")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1 && attempts.first?["remote_batch"] == nil, "\(id): one live attempt: \(attempts)")
        }
        #expect(try creations(harness).isEmpty, "the refused create made nothing, and none was made again")
    }

    /// The output file's first download cut short at a line's end: it is fetched again from
    /// the start, never split from the part on disk, so every request is answered by the
    /// batch and none goes live.
    @Test func aCutOutputDownloadIsFetchedAgainAndNothingGoesLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "download:cut"])
        try harness.startDaemon(config: config(harness))
        let ids = ["c1", "c2", "c3", "c4"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Cut download \(id)")) }
        try waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        for id in ids {
            #expect(try harness.arrivals(of: "Cut download \(id)").isEmpty, "\(id) was answered by the batch, not live")
        }
        let counts = try stubBatches(harness)
        let made = counts["creations"] as? [String: Int] ?? [:]
        #expect(made.count == 1 && made.values.first == 1, "one batch in all: \(made)")
        let group = try #require(made.keys.first)
        #expect((counts["downloads"] as? [String: Int])?[group] == 2, "the cut download, then the whole one: \(counts)")
    }

    /// A provider trickling a poll's answer (a byte every half second, which libcurl's
    /// low-speed check alone lets through) would hold the lane's one thread for minutes:
    /// an API's small answer must come within the idle timeout, and the next poll goes on.
    @Test func aTricklingPollIsCutAtTheIdleTimeoutAndTheGroupGoesOn() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "poll:trickle,poll:trickle"])
        try harness.startDaemon(config: config(harness, ["idle_timeout_seconds": 3]))
        let ids = ["t1", "t2"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Trickled poll \(id)")) }
        try waitForOutcomes(harness, ids)
        #expect(try stubBatches(harness)["trickled"] as? Int == 2)
        #expect(harness.log.contains("a remote batch step failed") && harness.log.contains("timed out"),
                "\(harness.log.split(separator: "\n").filter { $0.contains("step") }.joined(separator: "\n"))")
        for id in ids { #expect(try harness.arrivals(of: "Trickled poll \(id)").isEmpty, "\(id) was answered by the batch") }
    }

    /// A batch the provider no longer knows (deleted on its dashboard) never brings its
    /// answers: after five polls answered 404 in a row the group's requests go live, each
    /// answered once.
    @Test func aBatchThePollKeepsNotFindingSendsItsRequestsLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "30", "--batch-faults", Array(repeating: "poll:404", count: 5).joined(separator: ",")])
        try harness.startDaemon(config: config(harness))
        let ids = ["n1", "n2"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Lost batch \(id)")) }
        try waitForOutcomes(harness, ids, timeout: 90)
        #expect(harness.log.contains("(5 times in a row)"), "\(harness.log.split(separator: "\n").filter { $0.contains("group") }.joined(separator: "\n"))")
        for id in ids {
            #expect(try harness.arrivals(of: "Lost batch \(id)").count == 1, "\(id) was sent live once")
            #expect(Harness.content(of: try harness.json(harness.layout.result(id)))?.hasPrefix("Echo: Lost batch \(id)") == true)
        }
    }

    /// A provider that keeps a batch `in_progress` past the deadline: the daemon cancels it,
    /// and its requests, which never ran, are each sent live once.
    @Test func aBatchStillRunningAtItsDeadlineIsCancelledAndItsRequestsGoLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3600"])
        try harness.startDaemon(config: config(harness, ["batch_deadline_seconds": 3]))
        let ids = ["d1", "d2"]
        for id in ids { try harness.drop(id, Self.deferrable(id, "Overdue \(id)")) }
        try waitForOutcomes(harness, ids, timeout: 60)
        #expect(harness.log.contains("past batch_deadline_seconds (3)"), "\(harness.log.split(separator: "\n").filter { $0.contains("group") }.joined(separator: "\n"))")
        #expect(try cancelledGroups(harness).count == 1, "the remote batch was cancelled")
        #expect(try creations(harness).values.reduce(0, +) == 1, "no second batch")
        for id in ids {
            #expect(try harness.arrivals(of: "Overdue \(id)").count == 1, "\(id) was sent live once")
            #expect(Harness.content(of: try harness.json(harness.layout.result(id)))?.hasPrefix("Echo: Overdue \(id)") == true)
        }
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
    }

    /// A stop does not wait for a lane exchange under way: a trickled poll is aborted, the
    /// daemon exits within its grace, and the group's record stays for the next start.
    @Test func aStopIsNotHeldByATricklingPoll() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "30", "--batch-faults", "poll:trickle,poll:trickle,poll:trickle"])
        try harness.startDaemon(config: config(harness, ["shutdown_grace_seconds": 2]))
        try harness.drop("held", Self.deferrable("held", "Held by a trickle"))
        try waitUntil("a poll is being trickled", timeout: 30) { (try? stubBatches(harness))?["trickled"] as? Int ?? 0 >= 1 }
        harness.signalDaemon(SIGTERM)
        try waitUntil("the daemon stopped", timeout: 20) { !harness.daemonIsRunning }
        #expect(harness.log.contains("stopped, the daemon is stopping"), "the exchange was aborted")
        #expect(Syscall.isPresent(harness.layout.request("held")), "the request stays in outgoing")
        #expect(harness.files(in: harness.layout.remote).contains { $0.hasSuffix(".json") }, "the group's record stays for the next start")
    }

    @Test func withDeferredExpiredFailAnExpiredMemberFailsAsExpiredAndAFailedLineIsRetriedLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try harness.startDaemon(config: config(harness, ["deferred_expired": "fail"]))
        try harness.drop("late", Self.deferrable("late", "Too late", stub: ["batch_line": "expire"]))
        try harness.drop("flaky", Self.deferrable("flaky", "Line failed", stub: ["batch_line": "fail"]))
        try harness.drop("fine", Self.deferrable("fine", "Line fine"))
        try waitForOutcomes(harness, ["late", "flaky", "fine"])
        let record = try harness.json(harness.layout.errorRecord("late"))
        #expect(record["kind"] as? String == "expired", "\(record)")
        #expect((record["message"] as? String)?.contains("expired before this request ran") == true, "\(record)")
        #expect(Syscall.isPresent(harness.layout.failed + "/late.json"))
        #expect(try harness.arrivals(of: "Too late").isEmpty, "deferred_expired fail: never sent live")
        try SDKJudge.expectParses("ChatCompletion", [harness.layout.result("flaky"), harness.layout.result("fine")])
        #expect(try harness.arrivals(of: "Line failed").count == 1, "the failed line was retried live")
        let attempts = try #require(try harness.record("flaky")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["outcome"] as? String } == ["transport", "ok"], "\(attempts)")
        #expect(try harness.arrivals(of: "Line fine").isEmpty)
    }

    /// Every member of a sent group deleted: the remote batch is cancelled once, nothing is
    /// published, no hook runs; with a daemon stopped meanwhile, the next one cancels it.
    @Test func deletingEveryMemberOfASentGroupCancelsItsRemoteBatch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let hooked = harness.root + "/hooked.log"
        let hook = ["/bin/sh", "-c", "echo \"$LLMSPOOL_STATUS $LLMSPOOL_ID\" >> \(hooked)"]
        try harness.startStub(["--batch-seconds", "3600"])
        try harness.startDaemon(config: config(harness, ["on_complete": hook, "on_failure": hook]))
        for id in ["x1", "x2"] { try harness.drop(id, Self.deferrable(id, "Cancel \(id)")) }
        try waitUntil("the remote batch is created", timeout: 30) { harness.log.contains("remote batch created") }
        let group = try #require(try creations(harness).keys.first)
        try Syscall.unlink(harness.layout.request("x1"))
        try waitUntil("the first deletion is seen", timeout: 20) { harness.log.contains("a member of a sent group was deleted id=x1") }
        #expect(try cancelledGroups(harness).isEmpty, "one member is left: the batch runs on")
        try Syscall.unlink(harness.layout.request("x2"))
        try waitUntil("the batch is cancelled and the group ends", timeout: 30) {
            (try? self.cancelledGroups(harness)) == [group] && harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty
        }
        for id in ["x1", "x2"] {
            #expect(!Syscall.isPresent(harness.layout.result(id)) && !Syscall.isPresent(harness.layout.errorRecord(id)))
            #expect(try harness.record(id)["status"] as? String == "cancelled")
        }
        #expect(!Syscall.isPresent(hooked), "no hook for a discarded answer")
        #expect(try creations(harness) == [group: 1])

        // Deleted while no daemon runs: the next start cancels the batch.
        for id in ["y1", "y2"] { try harness.drop(id, Self.deferrable(id, "Cancel \(id)")) }
        try waitUntil("the second batch is created", timeout: 30) { (try? self.creations(harness).count) == 2 }
        try waitUntil("its id is recorded", timeout: 20) {
            harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.contains { name in
                ((try? harness.json(harness.layout.remote + "/" + name))?["batch_id"] as? String) != nil
            }
        }
        harness.killDaemon()
        for id in ["y1", "y2"] { try Syscall.unlink(harness.layout.request(id)) }
        try harness.startDaemon(config: config(harness, ["on_complete": hook, "on_failure": hook]))
        try waitUntil("the recovered batch is cancelled and the group ends", timeout: 30) {
            (try? self.cancelledGroups(harness).count) == 2 && harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty
        }
        #expect(!Syscall.isPresent(hooked))
        #expect(try creations(harness).values.allSatisfy { $0 == 1 })
    }

    @Test func checkConfigShowsTheLaneAndNamesABadSetting() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.writeConfig(["endpoints": [["name": "batchy", "base_url": "http://127.0.0.1:9/v1", "batch": true]],
                                 "default_completion_window": "24h", "deferred_fallback": "fail"])
        let checked = try harness.cli(["check-config", "--config", harness.configPath])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stdout.contains("endpoint[0] batchy (openai)") && checked.stdout.contains("batch: http://127.0.0.1:9/v1/files + /batches"))
        #expect(checked.stdout.contains("default_completion_window = 24h") && checked.stdout.contains("deferred_fallback = fail"))
        try harness.writeConfig(["endpoints": [["name": "messages-batch", "base_url": "http://127.0.0.1:9", "api": "anthropic", "batch": true]]])
        let anthropic = try harness.cli(["check-config", "--config", harness.configPath])
        #expect(anthropic.status == 0, "\(anthropic.stderr)")
        #expect(anthropic.stdout.contains("endpoint[0] messages-batch (anthropic)") && anthropic.stdout.contains("batch: http://127.0.0.1:9/v1/messages/batches"), "\(anthropic.stdout)")
        try harness.writeConfig(["endpoints": [["base_url": "http://127.0.0.1:9", "api": "anthropic", "model": "m", "batch": true]]])
        let refused = try harness.cli(["check-config", "--config", harness.configPath])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("\(harness.configPath): endpoints[0]: \"batch\": true cannot go with \"model\""), "\(refused.stderr)")
    }
}
