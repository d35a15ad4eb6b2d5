import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// The stub's Anthropic Message Batches faults through the real daemon: results whose lines
/// succeeded, errored and expired; a batch that ends with every request expired (Anthropic's
/// batch ends `ended`, never failed, with a result per request); a create refused (the one
/// refusal of a whole batch Anthropic has); 429 and 500 on the create; and a results
/// download cut short. Every request ends with exactly one outcome, and the stub's counts
/// prove no group was created twice.
@Suite(.serialized) struct BackgroundLaneMessagesFaultTests {
    let lane = BackgroundLaneTests()
    let messages = BackgroundLaneMessagesTests()

    func attempts(_ harness: Harness, _ id: String) throws -> [[String: Any]] {
        try #require(try harness.record(id)["attempts"] as? [[String: Any]], "\(id) has a record with attempts")
    }

    /// Each kind of result line in one batch: `succeeded` is published from the batch,
    /// `errored` with `invalid_request_error` goes to failed/ (a 400, not retried), `errored`
    /// with `api_error` is retried through the live lane, `expired` goes live
    /// (`deferred_expired` `live`); one message batch, each request one outcome.
    @Test func aBatchsSucceededErroredAndExpiredLinesEachEndOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try messages.start(harness)
        try harness.drop("ok", BackgroundLaneMessagesTests.deferrable("Kinds ok"))
        try harness.drop("bad", BackgroundLaneMessagesTests.deferrable("Kinds bad", stub: ["status": 400]))
        try harness.drop("flaky", BackgroundLaneMessagesTests.deferrable("Kinds flaky", stub: ["batch_line": "fail"]))
        try harness.drop("late", BackgroundLaneMessagesTests.deferrable("Kinds late", stub: ["batch_line": "expire"]))
        let ids = ["ok", "bad", "flaky", "late"]
        try lane.waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("Message", ["ok", "flaky", "late"].map { harness.layout.result($0) })

        #expect(try harness.arrivals(of: "Kinds ok").isEmpty, "answered by the batch")
        #expect(try attempts(harness, "ok").map { $0["lane"] as? String } == ["batch"])

        let refused = try harness.json(harness.layout.errorRecord("bad"))
        #expect(refused["kind"] as? String == "http" && refused["http_status"] as? Int == 400, "\(refused)")
        #expect((refused["provider_error"] as? [String: Any]).flatMap { $0["error"] as? [String: Any] }?["type"] as? String == "invalid_request_error",
                "the provider's error as the result line carried it: \(refused)")
        #expect(try harness.arrivals(of: "Kinds bad").isEmpty, "a 400 is not retried, live or not")
        let badAttempts = try attempts(harness, "bad")
        #expect(badAttempts.count == 1 && (badAttempts.first?["remote_batch"] as? String)?.hasPrefix("msgbatch_") == true, "\(badAttempts)")

        #expect(try harness.arrivals(of: "Kinds flaky").count == 1, "the api_error line was retried live once")
        let flaky = try attempts(harness, "flaky")
        #expect(flaky.count == 2 && flaky.first?["remote_batch"] != nil && flaky.last?["remote_batch"] == nil, "\(flaky)")

        #expect(try harness.arrivals(of: "Kinds late").count == 1, "the expired line went live once")
        #expect(try attempts(harness, "late").map { $0["outcome"] as? String } == ["expired", "ok"])

        let made = try lane.creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "one group, created once: \(made)")
    }

    /// A message batch that ran out its window: `processing_status` `ended` and every
    /// result `expired` (Anthropic has no batch-level failed or expired). With
    /// `deferred_expired` `live` each request is sent once through the live lane, its expiry
    /// an attempt of its own; with `fail` each goes to failed/ as `expired`, never sent live.
    @Test(arguments: ["live", "fail"])
    func aBatchThatEndsWithEveryRequestExpiredFollowsDeferredExpired(policy: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-ending", "expired"])
        try messages.start(harness, ["deferred_expired": policy, "max_attempts": 1])
        let ids = ["e1", "e2", "e3"]
        for id in ids { try harness.drop(id, BackgroundLaneMessagesTests.deferrable("Expired \(policy) \(id)")) }
        try lane.waitForOutcomes(harness, ids)
        for id in ids {
            let attempts = try attempts(harness, id)
            #expect((attempts.first?["remote_batch"] as? String)?.hasPrefix("msgbatch_") == true, "\(id): \(attempts)")
            if policy == "live" {
                #expect(try harness.arrivals(of: "Expired \(policy) \(id)").count == 1, "\(id) went live once")
                // max_attempts 1: the expiry uses up no attempt.
                #expect(attempts.map { $0["outcome"] as? String } == ["expired", "ok"], "\(id): \(attempts)")
                #expect(attempts.last?["remote_batch"] == nil, "the second attempt was live")
            } else {
                #expect(try harness.arrivals(of: "Expired \(policy) \(id)").isEmpty, "\(id): deferred_expired fail never sends it live")
                let record = try harness.json(harness.layout.errorRecord(id))
                #expect(record["kind"] as? String == "expired", "\(record)")
                #expect((record["message"] as? String)?.contains("expired before this request ran") == true, "\(record)")
            }
        }
        if policy == "live" { try SDKJudge.expectParses("Message", ids.map { harness.layout.result($0) }) }
        let made = try lane.creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "one group, created once: \(made)")
    }

    /// A create refused outright (a 400: the provider takes none of it) is what a batch that
    /// ends `failed` is for OpenAI: nothing remote exists, and the group's requests go live
    /// untouched, each once.
    @Test func aCreateRefusedSendsTheGroupLiveUntouched() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "create:400"])
        try messages.start(harness)
        let ids = ["r1", "r2"]
        for id in ids { try harness.drop(id, BackgroundLaneMessagesTests.deferrable("Refused \(id)")) }
        try lane.waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("Message", ids.map { harness.layout.result($0) })
        for id in ids {
            #expect(try harness.arrivals(of: "Refused \(id)").count == 1, "\(id) went live once")
            let attempts = try attempts(harness, id)
            #expect(attempts.count == 1 && attempts.first?["remote_batch"] == nil, "\(id): one live attempt: \(attempts)")
        }
        #expect(try lane.creations(harness).isEmpty, "the refused create made nothing, and none was made again")
        #expect(harness.log.contains("a group cannot go through the Batch API; its requests go live"))
    }

    /// A 429 on the create (nothing made: created again), a 500 (may have committed: the
    /// list is read first, finds none, and only then is it created again), and the results'
    /// first download cut short at a line's end: the download is fetched again from the
    /// start, not split from the part on disk, so every request is answered by the batch.
    @Test func createFaultsAndACutResultsDownloadEndWithOneBatchAndTheBatchsAnswers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "create:429,create:500,download:cut"])
        try messages.start(harness)
        let ids = ["d1", "d2", "d3", "d4"]
        for id in ids { try harness.drop(id, BackgroundLaneMessagesTests.deferrable("Download \(id)")) }
        try lane.waitForOutcomes(harness, ids, timeout: 120)
        try SDKJudge.expectParses("Message", ids.map { harness.layout.result($0) })
        for id in ids {
            #expect(try harness.arrivals(of: "Download \(id)").isEmpty, "\(id) was answered by the batch, not live")
            #expect(AnthropicMessagesTests.text(of: try harness.json(harness.layout.result(id)))?.hasPrefix("Echo: Download \(id)") == true)
            let attempts = try attempts(harness, id)
            #expect(attempts.count == 1 && attempts.first?["lane"] as? String == "batch", "\(id): \(attempts)")
        }
        let counts = try lane.stubBatches(harness)
        let made = counts["creations"] as? [String: Int] ?? [:]
        #expect(made.count == 1 && made.values.first == 1, "the 429 and the 500 made nothing, one batch in all: \(made)")
        let group = try #require(made.keys.first)
        #expect((counts["downloads"] as? [String: Int])?[group] == 2, "the cut download, then the whole one: \(counts)")
        #expect(harness.log.contains("the create's outcome is unknown"), "the 500 was taken as a create that may have committed")
        #expect(harness.log.contains("no batch of the group was found after a create that got no answer: it is created again in 4 s"))
        #expect(harness.log.contains("the results of msgbatch_"), "the cut download was logged as a failed step")
    }
}
