import Foundation
import LLMSpoolCore
import Testing

/// Every wait has a reason that `status`, `queue`, `show` and the log name: an endpoint
/// cooling down after failures, or paused by the provider's Retry-After.
@Suite(.serialized) struct WaitReasonTests {
    func daemon(_ config: [String: Any], fault: [String: Any]) throws -> Harness {
        let harness = try Harness()
        try harness.startStub()
        var full = config
        full["endpoints"] = [["name": "stub", "base_url": harness.stubURL]]
        full["retry_initial_seconds"] = 0.2
        full["retry_max_seconds"] = 0.2
        try harness.startDaemon(config: full)
        try harness.drop("w", Harness.request("w", stub: ["faults": [fault]]))
        return harness
    }

    func expectTheWaitIsNamed(_ harness: Harness, _ phrase: String) throws {
        var status = ""
        try waitUntil("status names the endpoint's wait", timeout: 30) {
            status = (try? harness.cli(["status", "--spool", harness.layout.root]).stdout) ?? ""
            return status.contains(phrase)
        }
        #expect(status.contains("endpoints waiting:\n  endpoint stub \(phrase) until "), "\(status)")
        let queue = try harness.cli(["queue", "--spool", harness.layout.root]).stdout
        #expect(queue.contains("endpoint stub \(phrase) until "), "queue gives no reason: \(queue)")
        let show = try #require(JSONObject.parse(Array(try harness.cli(["show", "w", "--spool", harness.layout.root]).stdout.utf8)))
        let waitingFor = try #require(show["waiting_for"] as? String, "show gives no reason: \(show)")
        #expect(waitingFor.contains("endpoint stub \(phrase) until "))
        let json = try #require(JSONObject.parse(Array(try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout.utf8)))
        let waits = try #require(json["endpoint_waits"] as? [[String: Any]])
        #expect(waits.count == 1 && waits.first?["endpoint"] as? String == "stub", "\(waits)")
        let log = try String(contentsOfFile: harness.daemonLog, encoding: .utf8)
        #expect(log.contains("endpoint waiting") && log.contains(phrase), "the log does not say why: \(log.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.result("w")), "it waits, it is not sent")
    }

    @Test func aCoolDownIsNamedWithItsFailuresAndPushesTheNextAttempt() throws {
        let harness = try daemon(["cooldown_after_failures": 1, "cooldown_seconds": 600], fault: ["status": 503])
        defer { harness.stop() }
        try expectTheWaitIsNamed(harness, "cooling down")
        let status = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(status.contains("(1 failure in a row)"), "\(status)")
        let show = try #require(JSONObject.parse(Array(try harness.cli(["show", "w", "--spool", harness.layout.root]).stdout.utf8)))
        if let next = (show["next_attempt_at"] as? String).flatMap(Timestamp.date) {
            #expect(next.timeIntervalSinceNow > 500, "next_attempt_at ignores the cool-down: \(show)")
        }
    }

    @Test func aRetryAfterIsNamed() throws {
        let harness = try daemon(["cooldown_after_failures": 100], fault: ["status": 503, "retry_after": "600"])
        defer { harness.stop() }
        try expectTheWaitIsNamed(harness, "paused by Retry-After")
    }
}
