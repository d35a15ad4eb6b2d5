import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// The background lane on a spool with leases: a request goes into a group only under its
/// claim, so it is batched by one daemon, once, and its answer is published by that daemon
/// (unclaimed, the finisher discarded every answer and the request was batched again at
/// each rescan).
@Suite(.serialized) struct LaneSharedSpoolTests {
    static func config(_ harness: Harness, _ extra: [String: Any]) -> [String: Any] {
        var config = BackgroundLaneTests.lane
        config["endpoints"] = [["name": "batchy", "base_url": harness.stubURL, "batch": true]]
        config["leases"] = true
        config["lease_seconds"] = 3
        config.merge(extra) { $1 }
        return config
    }

    func expectAnsweredByBatchesOnce(_ harness: Harness, _ ids: [String], prompt: String) throws {
        try BackgroundLaneTests().waitForOutcomes(harness, ids)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        for id in ids {
            #expect(try harness.arrivals(of: "\(prompt) \(id)").isEmpty, "\(id) was sent live")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1, "\(id): \(attempts)")
        }
        let made = try BackgroundLaneTests().creations(harness)
        #expect(!made.isEmpty && made.values.allSatisfy { $0 == 1 }, "each group created once: \(made)")
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".partial") }.isEmpty)
    }

    @Test func oneDaemonWithLeasesPublishesItsBatchsAnswers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "2"])
        try harness.startDaemon(config: Self.config(harness, ["host_id": "only"]))
        let ids = ["l1", "l2", "l3"]
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "Leased \(id)")) }
        try expectAnsweredByBatchesOnce(harness, ids, prompt: "Leased")
        #expect(!harness.log.contains("attempt discarded"))
    }

    @Test func twoDaemonsBatchEachRequestOnceBetweenThem() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "2"])
        let names = ["h1", "h2"]
        for name in names {
            _ = try harness.startExtraDaemon(name, config: Self.config(harness, ["host_id": name, "watch_mode": "poll", "poll_interval_seconds": 0.2]))
        }
        let ids = (0..<8).map { "t\($0)" }
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "Shared \(id)")) }
        try expectAnsweredByBatchesOnce(harness, ids, prompt: "Shared")
        let logs = names.map { harness.extraLog($0) }
        for id in ids {
            let grouped = logs.map { $0.components(separatedBy: "deferred to the background lane id=\(id) ").count - 1 }
            #expect(grouped.reduce(0, +) == 1, "\(id) went into one group of one daemon: \(grouped)")
        }
    }
}
