import Foundation
import LLMSpoolCore
import Testing

/// `retry ID` and `retry --all` on requests that wait in `outgoing` for their next attempt,
/// like `postqueue -i` and `-f`: the running daemon sends them at once.
@Suite(.serialized) struct SendNowTests {
    /// A daemon whose every retry waits ten minutes, and a request whose first attempt fails.
    func waiting(_ ids: [String]) throws -> Harness {
        let harness = try Harness()
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "stub", "base_url": harness.stubURL]],
                                         "retry_initial_seconds": 600, "retry_max_seconds": 600])
        for id in ids {
            try harness.drop(id, Harness.request("p-\(id)", stub: ["faults": [["status": 503]]]))
        }
        try waitUntil("each first attempt failed and waits", timeout: 30) {
            ids.allSatisfy { id in
                ((try? harness.record(id))?["next_attempt_at"]) != nil && ((try? harness.arrivals(of: "p-\(id)").count) ?? 0) == 1
            }
        }
        return harness
    }

    @Test func retryOfAWaitingRequestSendsItNow() throws {
        let harness = try waiting(["slow", "other"])
        defer { harness.stop() }
        let asked = try harness.cli(["retry", "slow", "--spool", harness.layout.root])
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stdout == "asked the daemon to send slow now\n", "\(asked.stdout)")
        #expect(!asked.stderr.contains("no daemon"), "\(asked.stderr)")
        try waitUntil("slow is answered long before its retry time", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("slow"))
        }
        #expect(try harness.arrivals(of: "p-slow").count == 2)
        #expect(try harness.arrivals(of: "p-other").count == 1, "only the one asked for goes")
        #expect(Syscall.isPresent(harness.layout.request("other")))
        #expect(harness.files(in: harness.layout.control).isEmpty, "a daemon alone on its spool removes what it acted on")
    }

    @Test func retryAllSendsEveryWaitingRequest() throws {
        let harness = try waiting(["a", "b", "c"])
        defer { harness.stop() }
        let asked = try harness.cli(["retry", "--all", "--spool", harness.layout.root])
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stdout == "asked the daemon to send every waiting request now\n", "\(asked.stdout)")
        try waitUntil("all three answered", timeout: 20) {
            ["a", "b", "c"].allSatisfy { FileManager.default.fileExists(atPath: harness.layout.result($0)) }
        }
        for id in ["a", "b", "c"] { #expect(try harness.arrivals(of: "p-\(id)").count == 2, "\(id)") }
    }

    @Test func retryOfAnUnknownIDFailsAndWritesNothing() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let asked = try harness.cli(["retry", "nothing", "--spool", harness.layout.root])
        #expect(asked.status == 1)
        #expect(asked.stderr.contains("nothing: no failed request"), "\(asked.stderr)")
        #expect(harness.files(in: harness.layout.control).isEmpty)
        let both = try harness.cli(["retry", "--all", "--all-failed", "--spool", harness.layout.root])
        #expect(both.status == 2 && both.stderr.contains("not both"), "\(both.stderr)")
    }

    @Test func withoutADaemonTheRequestWaitsAndTheCommandSaysSo() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.drop("later", Harness.request("later"))
        let asked = try harness.cli(["retry", "later", "--spool", harness.layout.root])
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stderr.contains("no daemon is running"), "\(asked.stderr)")
        #expect(harness.files(in: harness.layout.control) == ["send-now.later"])
    }

    /// Like `postqueue -i`, which ignores the destination's back-off for that message: a
    /// request held only by its endpoint's cool-down goes when asked for; the others keep
    /// waiting for the cool-down to end.
    @Test func retryOfARequestHeldByACoolDownSendsItNow() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "stub", "base_url": harness.stubURL]],
                                         "retry_initial_seconds": 0.05, "retry_max_seconds": 0.05,
                                         "cooldown_after_failures": 3, "cooldown_seconds": 600])
        let fault: [String: Any] = ["status": 503]
        try harness.drop("sick", Harness.request("p-sick", stub: ["faults": [fault, fault, fault]]))
        try waitUntil("the endpoint cools down", timeout: 30) {
            let status = (try? harness.cli(["status", "--json", "--config", harness.configPath]).stdout).flatMap { JSONObject.parse(Array($0.utf8)) }
            return (status?["endpoint_waits"] as? [[String: Any]])?.first?["cause"] as? String == "cooling-down"
        }
        try harness.drop("bystander", Harness.request("p-bystander"))
        let asked = try harness.cli(["retry", "sick", "--config", harness.configPath])
        #expect(asked.status == 0, "\(asked.stderr)")
        try waitUntil("sick is answered during the cool-down", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("sick"))
        }
        #expect(try harness.arrivals(of: "p-sick").count == 4)
        #expect(try harness.arrivals(of: "p-bystander").isEmpty, "the cool-down still holds the others")
        let show = try #require(JSONObject.parse(Array(try harness.cli(["show", "bystander", "--config", harness.configPath]).stdout.utf8)))
        #expect(show["state"] as? String == "waiting", "\(show)")
    }
}
