import Foundation
import Glibc
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

/// The cases as a newcomer saw them: an endpoint that refuses connections three
/// times in a row cools down for the default 30 s, and a 503 with Retry-After: 40 pauses it.
/// The requests they hold are counted and listed as waiting, with the reason and the real
/// time of their next attempt, by every command run as a subprocess.
@Suite(.serialized) struct HeldRequestsTests {
    /// A port on loopback nobody listens on: bound, read and closed again.
    static func refusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw HarnessError("bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func status(_ harness: Harness) throws -> [String: Any] {
        try #require(JSONObject.parse(Array(try harness.cli(["status", "--json", "--config", harness.configPath]).stdout.utf8)))
    }

    @Test func threeRefusedConnectionsCoolTheEndpointDownAndItsRequestWaitsVisibly() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let port = try Self.refusedPort()
        try harness.startDaemon(config: ["endpoints": [["name": "openai", "base_url": "http://127.0.0.1:\(port)/v1"]],
                                         "metrics": "127.0.0.1:0", "retry_initial_seconds": 0.1, "retry_max_seconds": 0.2,
                                         // The shipped defaults, which the harness turns off.
                                         "cooldown_after_failures": 3, "cooldown_seconds": 30])
        try harness.drop("held", Harness.request("held"))
        var json: [String: Any] = [:]
        try waitUntil("the endpoint cools down after three refused connections", timeout: 30) {
            json = (try? status(harness)) ?? [:]
            return (json["endpoint_waits"] as? [[String: Any]])?.first?["cause"] as? String == "cooling-down"
        }
        // Past the request's own short back-off, only the cool-down holds it.
        Thread.sleep(forTimeInterval: 1)
        json = try status(harness)
        #expect(json["queued"] as? Int == 0 && json["waiting"] as? Int == 1, "the held request is not counted as waiting: \(json)")
        let listed = try #require((json["deferred_requests"] as? [[String: Any]])?.first, "\(json)")
        let reason = try #require(listed["reason"] as? String, "no reason: \(listed)")
        #expect(reason.contains("endpoint openai cooling down until ") && reason.contains("(3 failures in a row)"), "\(reason)")
        let wait = try #require((json["endpoint_waits"] as? [[String: Any]])?.first)
        let coolEnd = try #require((wait["until"] as? String).flatMap(Timestamp.date))
        #expect(coolEnd.timeIntervalSinceNow > 20, "the default cool-down is 30 s: \(wait)")

        let show = try #require(JSONObject.parse(Array(try harness.cli(["show", "held", "--config", harness.configPath]).stdout.utf8)))
        #expect(show["state"] as? String == "waiting", "\(show)")
        let next = try #require((show["next_attempt_at"] as? String).flatMap(Timestamp.date), "\(show)")
        #expect(abs(next.timeIntervalSince(coolEnd)) < 0.01, "show's next attempt is not the cool-down's end: \(next) vs \(coolEnd)")
        #expect((show["waiting_for"] as? String)?.contains("cooling down") == true, "\(show)")

        let text = try harness.cli(["status", "--config", harness.configPath]).stdout
        #expect(text.contains("queued 0  in-flight 0  waiting 1"), "\(text)")
        #expect(text.contains("waiting for: endpoint openai cooling down until "), "\(text)")
        let queue = try harness.cli(["queue", "--config", harness.configPath]).stdout
        #expect(queue.contains("held  waiting  ") && queue.contains("cooling down until"), "\(queue)")

        let log = try String(contentsOfFile: harness.daemonLog, encoding: .utf8).split(separator: "\n")
        let lines = log.filter { $0.contains("endpoint waiting") && $0.contains("cooling-down") }
        #expect(lines.count == 1, "one line says the endpoint cools down: \(lines)")
        #expect(lines.first?.contains("until=") == true && lines.first?.contains("failures=3") == true, "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.errorRecord("held")))

        let metrics = String(decoding: try LoopbackGet.body(port: try harness.metricsPort(), path: "/metrics"), as: UTF8.self)
        #expect(metrics.contains("llmspool_endpoint_cooldowns_total{endpoint=\"openai\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("llmspool_endpoint_waiting{endpoint=\"openai\",cause=\"cooling-down\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("llmspool_endpoint_attempts_total{endpoint=\"openai\",result=\"transport-error\"} 3\n"), "\(metrics)")
    }

    @Test func aRetryAfterPauseHoldsUnrelatedRequestsAsWaitingWithThatReason() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "stub", "base_url": harness.stubURL]], "cooldown_after_failures": 100])
        try harness.drop("asks", Harness.request("asks", stub: ["faults": [["status": 503, "retry_after": "40"]]]))
        try waitUntil("the 503 arrived", timeout: 20) { ((try? harness.arrivals(of: "asks").count) ?? 0) == 1 }
        for id in ["u1", "u2", "u3"] { try harness.drop(id, Harness.request(id)) }
        var json: [String: Any] = [:]
        try waitUntil("the three unrelated requests are listed as waiting", timeout: 20) {
            json = (try? status(harness)) ?? [:]
            let ids = Set(((json["deferred_requests"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String })
            return ids.isSuperset(of: ["u1", "u2", "u3"])
        }
        #expect(json["waiting"] as? Int == 4 && json["queued"] as? Int == 0, "\(json)")
        for entry in (json["deferred_requests"] as? [[String: Any]]) ?? [] where (entry["id"] as? String)?.hasPrefix("u") == true {
            #expect((entry["reason"] as? String)?.contains("endpoint stub paused by Retry-After until ") == true, "\(entry)")
            let next = try #require((entry["next_attempt_at"] as? String).flatMap(Timestamp.date))
            #expect(next.timeIntervalSinceNow > 25, "the pause is 40 s: \(entry)")
        }
        let show = try #require(JSONObject.parse(Array(try harness.cli(["show", "u2", "--config", harness.configPath]).stdout.utf8)))
        #expect(show["state"] as? String == "waiting" && (show["waiting_for"] as? String)?.contains("Retry-After") == true, "\(show)")
        #expect(try harness.arrivals(of: "u1").isEmpty, "nothing is sent during the pause")
    }
}
