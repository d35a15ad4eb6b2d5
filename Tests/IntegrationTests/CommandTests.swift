import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// The people's commands, each run as a subprocess against the real daemon and stub.
@Suite(.serialized) struct CommandTests {
    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    func requestText(_ prompt: String, stream: Bool = false, stub: [String: Any]? = nil) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: Harness.request(prompt, stream: stream, stub: stub)), as: UTF8.self)
    }

    @Test func submitWaitPrintsTheExactAnswerEvenWhenTheDaemonStartsLater() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let prompt = "stream it to me"
        let input = try requestText(prompt, stream: true, stub: ["tokens": 12, "token_delay_ms": 30])
        // The waiter starts first; the daemon a moment later.
        let waiter = Thread {
            usleep(500_000)
            try? harness.startDaemon()
        }
        waiter.start()
        let finished = try harness.cli(["submit", "-", "--wait", "--id", "live", "--spool", harness.layout.root, "--timeout", "60"], stdin: input)
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(finished.stdout == StubAnswer.content(prompt: prompt, tokens: 12), "stdout carries the answer's text and nothing else")
        #expect(finished.stderr.contains("live"), "the id goes to stderr")
        #expect(!finished.stderr.contains("\u{1B}["), "no live line when stderr is not a terminal")
        try waitUntil("the daemon is up", timeout: 20) { harness.daemonIsRunning }
    }

    @Test func submitWaitExitsOneWithTheErrorForARefusedRequest() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let finished = try harness.cli(["submit", "-", "--wait", "--id", "refused", "--spool", harness.layout.root],
                                       stdin: try requestText("no", stub: ["status": 400]))
        #expect(finished.status == 1)
        #expect(finished.stdout.isEmpty)
        #expect(finished.stderr.contains("refused failed: the endpoint answered HTTP 400"))
        #expect(finished.stderr.contains("refused.error.json"))
    }

    @Test func submitRefusesAnInvalidRequestAndNamesTheProblem() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let finished = try harness.cli(["submit", "-", "--spool", harness.layout.root], stdin: #"{"model": "m"}"#)
        #expect(finished.status == 1)
        #expect(finished.stderr.contains("standard input: the request has no \"messages\""))
        #expect(harness.files(in: harness.layout.outgoing).isEmpty, "nothing was dropped")
    }

    @Test func waitFollowsARequestSomeoneElseDropped() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("theirs", Harness.request("dropped by another program", stub: ["latency_ms": 300]))
        let finished = try harness.cli(["wait", "theirs", "--spool", harness.layout.root, "--timeout", "30"])
        #expect(finished.status == 0)
        #expect(finished.stdout == StubAnswer.content(prompt: "dropped by another program", tokens: 8))
        #expect(try harness.cli(["wait", "nobody", "--spool", harness.layout.root]).status == 1)
    }

    @Test func statusCountsMatchTheFolders() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // Long backoff, so a failed request waits; no Retry-After, which would pause the endpoint.
        try harness.startDaemon(config: ["concurrency": 1, "retry_initial_seconds": 60, "shutdown_grace_seconds": 0.2])
        try harness.drop("done1", Harness.request("one"))
        try harness.drop("done2", Harness.request("two", stream: true))
        try harness.drop("bad", Harness.request("three", stub: ["status": 400]))
        try waitUntil("three outcomes", timeout: 20) {
            exists(harness.layout.result("done1")) && exists(harness.layout.result("done2")) && exists(harness.layout.errorRecord("bad"))
        }
        try harness.drop("later", Harness.request("four", stub: ["faults": [["status": 503]]]))
        try waitUntil("the 503 is waiting", timeout: 20) { (try? harness.record("later"))?["next_attempt_at"] != nil }
        try harness.drop("slow", Harness.request("five", stream: true, stub: ["tokens": 100, "token_delay_ms": 100]))
        try waitUntil("the slow one streams", timeout: 20) { exists(harness.layout.partial("slow")) }
        try harness.drop("queued", Harness.request("six"))
        try waitUntil("the daemon's live status shows the transfer", timeout: 10) {
            let status = try? harness.cli(["status", "--json", "--spool", harness.layout.root])
            return status?.stdout.contains("\"tokens_received\"") == true
        }
        let finished = try harness.cli(["status", "--json", "--spool", harness.layout.root])
        #expect(finished.status == 0)
        let object = try #require(JSONObject(finished.stdout))
        #expect(object["queued"] as? Int == 1)
        #expect(object["in_flight"] as? Int == 1)
        #expect(object["deferred"] as? Int == 1)
        #expect(object["waiting"] as? Int == 1)
        #expect(object["done"] as? Int == 2)
        #expect(object["failed"] as? Int == 1)
        #expect(((object["daemon"] as? [String: Any])?["running"]) as? Bool == true)
        let flying = try #require((object["in_flight_requests"] as? [[String: Any]])?.first)
        #expect(flying["id"] as? String == "slow")
        #expect(flying["attempt"] as? Int == 1)
        let waiting = try #require((object["deferred_requests"] as? [[String: Any]])?.first)
        #expect(waiting["id"] as? String == "later")
        #expect((waiting["last_error"] as? String)?.contains("503") == true)
        // Usage: the plain answer reports it; the stream was asked for it by the daemon.
        let tokens = try #require(object["tokens"] as? [String: Int])
        #expect(tokens["completion_tokens"] == 16, "8 + 8 tokens, the stream's included")
        let text = try harness.cli(["status", "--spool", harness.layout.root])
        #expect(text.stdout.contains("queued 1  in-flight 1  waiting 1  done 2  failed 1"))
        // Without a daemon the counts still come from the folders.
        #expect(harness.stopDaemon() == 0)
        let offline = try #require(JSONObject(try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout))
        #expect(((offline["daemon"] as? [String: Any])?["running"]) as? Bool == false)
        #expect(offline["done"] as? Int == 2)
        #expect(offline["failed"] as? Int == 1)
    }

    /// A daemon that cannot rewrite its status (a full disk) or is stopped still runs:
    /// `status` says so, with how old its status is. Before, it said "not running".
    @Test func aDaemonWhoseStatusIsStaleIsStillSaidToRun() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        harness.signalDaemon(SIGSTOP)
        defer { harness.signalDaemon(SIGCONT) }
        let stopped = Date()
        try waitUntil("the status file is stale", timeout: 30) { Date().timeIntervalSince(stopped) > LiveStatus.staleAfterSeconds + 1 }
        let text = try harness.cli(["status", "--spool", harness.layout.root])
        #expect(text.stdout.contains("daemon: running (pid "), "\(text.stdout)")
        #expect(text.stdout.contains("its status was last written"), "\(text.stdout)")
        let object = try #require(JSONObject(try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout))
        let daemon = try #require(object["daemon"] as? [String: Any])
        #expect(daemon["running"] as? Bool == true && daemon["status_written_at"] != nil, "\(daemon)")
        harness.signalDaemon(SIGCONT)
        try waitUntil("fresh again", timeout: 20) {
            (try? harness.cli(["status", "--spool", harness.layout.root]).stdout.contains("its status was last written")) == false
        }
    }

    /// A stale status file whose pid is alive but holds no lock on the spool (a daemon
    /// killed long ago, its pid now another program's; here this test's own, whose name
    /// holds "llmspool"): no daemon runs. Before, any live pid with "llmspool" in its
    /// command line was said to be the daemon.
    @Test func aStaleStatusOfAPidThatHoldsNoSpoolLockIsNoDaemon() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let written = Timestamp.string(Date().addingTimeInterval(-3 * 86_400))
        try DurableFile.write(Array("{\"pid\":\(getpid()),\"updated_at\":\"\(written)\"}\n".utf8), to: LiveStatus.path(harness.layout))
        let text = try harness.cli(["status", "--spool", harness.layout.root])
        #expect(text.stdout.contains("daemon: not running"), "\(text.stdout)")
        let object = try #require(JSONObject(try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout))
        #expect((object["daemon"] as? [String: Any])?["running"] as? Bool == false, "\(object)")
    }

    @Test func showRetryCancelAndCleanDoWhatTheySay() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("flaky", Harness.request("refused once", stub: ["faults": [["status": 400]]]))
        try waitUntil("it failed", timeout: 20) { exists(harness.layout.failedRequest("flaky")) }
        let shown = try #require(JSONObject(try harness.cli(["show", "flaky", "--spool", harness.layout.root]).stdout))
        #expect(shown["state"] as? String == "failed")
        #expect((shown["error"] as? [String: Any])?["http_status"] as? Int == 400)
        #expect((shown["attempts"] as? [Any])?.count == 1)

        let retried = try harness.cli(["retry", "--all-failed", "--spool", harness.layout.root])
        #expect(retried.stdout == "requeued flaky\n")
        try waitUntil("the retry is answered", timeout: 20) { exists(harness.layout.result("flaky")) }
        #expect(!exists(harness.layout.errorRecord("flaky")))
        #expect(try harness.arrivals(of: "refused once").count == 2)
        let done = try #require(JSONObject(try harness.cli(["show", "flaky", "--spool", harness.layout.root]).stdout))
        #expect(done["state"] as? String == "done")
        #expect((done["attempts"] as? [Any])?.count == 1, "a retried request starts a fresh count")

        try harness.drop("long", Harness.request("cancel me", stream: true, stub: ["tokens": 100, "token_delay_ms": 100]))
        try waitUntil("it streams", timeout: 20) { exists(harness.layout.partial("long")) }
        #expect(try harness.cli(["cancel", "long", "--spool", harness.layout.root]).stdout == "cancelled long\n")
        try waitUntil("the transfer stopped", timeout: 10) { !exists(harness.layout.partial("long")) }
        #expect(try harness.cli(["show", "long", "--spool", harness.layout.root]).stdout.contains("\"state\" : \"cancelled\""))
        #expect(try harness.cli(["cancel", "long", "--spool", harness.layout.root]).status == 1, "nothing left to cancel")

        #expect(try harness.cli(["clean", "--older-than", "1d", "--spool", harness.layout.root]).stdout.hasPrefix("removed 0 results"))
        let cleaned = try harness.cli(["clean", "--older-than", "0s", "--spool", harness.layout.root])
        #expect(cleaned.stdout.hasPrefix("removed 1 results"))
        #expect(!exists(harness.layout.result("flaky")))
        #expect(try harness.cli(["clean", "--older-than", "soon", "--spool", harness.layout.root]).status == 2)
    }

    @Test func hooksRunOncePerRequestWithTheirEnvironment() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let log = harness.root + "/hooks.log"
        try harness.startDaemon(config: [
            // An argument vector: no shell unless asked.
            "on_complete": ["/bin/sh", "-c", "echo \"$LLMSPOOL_STATUS $LLMSPOOL_ID $LLMSPOOL_RESULT key=${OPENAI_API_KEY:-none}\" >> \(log)"],
            // A string: run by /bin/sh -c.
            "on_failure": "echo \"$LLMSPOOL_STATUS $LLMSPOOL_ID $LLMSPOOL_ERROR\" >> \(log); exit 3",
        ])
        try harness.drop("good", Harness.request("hooked"))
        try harness.drop("good2", Harness.request("hooked too", stream: true))
        try harness.drop("bad", Harness.request("hooked badly", stub: ["status": 400]))
        try waitUntil("three hooks ran", timeout: 20) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count == 3
        }
        #expect(harness.stopDaemon() == 0)
        let lines = Set(try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init))
        #expect(lines == [
            "done good \(harness.layout.result("good")) key=none",
            "done good2 \(harness.layout.result("good2")) key=none",
            "failed bad \(harness.layout.errorRecord("bad"))",
        ])
        #expect(harness.log.contains("hook failed id=bad"), "a failing hook is logged, not fatal")
    }
}

/// Parses a command's JSON output.
func JSONObject(_ text: String) -> [String: Any]? {
    try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
}

/// A hook past `hook_timeout_seconds` is killed with the children it started: one that
/// ignores SIGTERM does not outlive it.
@Suite(.serialized) struct HookTimeoutTests {
    @Test func aHookPastItsTimeIsKilledWithItsChildren() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let pidFile = harness.root + "/child.pid"
        try harness.startDaemon(config: [
            "hook_timeout_seconds": 1,
            "on_complete": "sh -c 'trap \"\" TERM; echo $$ > \(pidFile); exec sleep 600' & wait",
        ])
        try harness.drop("hooked", Harness.request("a hook that overstays"))
        try waitUntil("the hook is killed", timeout: 30) { harness.log.contains("hook killed after hook_timeout_seconds") }
        let text = try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let child = try #require(pid_t(text))
        // Reaped by init once killed; gone within a moment.
        try waitUntil("the hook's child is gone", timeout: 10) { kill(child, 0) != 0 }
    }
}
