import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolModel
@testable import LLMSpoolStub
import Testing

/// Defects found by trying to break the daemon from outside, each reproduced over real
/// sockets against a misbehaving endpoint.
@Suite(.serialized) struct HardeningTests {
    func waitForFailure(_ harness: Harness, _ id: String, timeout: TimeInterval = 30) throws -> [String: Any] {
        try waitUntil("\(id) is in failed/", timeout: timeout) {
            FileManager.default.fileExists(atPath: harness.layout.failedRequest(id))
        }
        return try harness.json(harness.layout.errorRecord(id))
    }

    /// An empty 200 has no `.partial`; it was judged a disk failure, which max_attempts
    /// does not count, and retried for a day.
    @Test(arguments: [200, 204]) func anEmptyAnswerIsMalformedAndBoundedByMaxAttempts(status: Int) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_attempts": 2])
        let prompt = "answer me with nothing \(status)"
        let empty: [String: Any] = ["status": status, "empty_body": true]
        try harness.drop("empty", Harness.request(prompt, stub: ["faults": [empty, empty, empty, empty]]))
        let record = try waitForFailure(harness, "empty")
        #expect(record["kind"] as? String == "malformed-response")
        #expect(record["attempts"] as? Int == 2)
        #expect(try harness.arrivals(of: prompt).count == 2)
    }

    @Test func aStreamOfOnlyDoneIsMalformed() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_attempts": 1])
        try harness.drop("hollow", Harness.request("done and nothing else", stream: true, stub: ["faults": [["done_only": true]]]))
        let record = try waitForFailure(harness, "hollow")
        #expect(record["kind"] as? String == "malformed-response")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.result("hollow")))
    }

    /// libcurl answers a giant header line with code 27 (out of memory), which was judged a
    /// permanent transport failure: it is the endpoint's answer being too large.
    @Test func aTenMegabyteHeaderLineIsResponseTooLarge() throws {
        let head = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Padding: ".utf8)
        let endpoint = try RawEndpoint(response: head + [UInt8](repeating: 0x61, count: 10 << 20) + Array("\r\nContent-Length: 2\r\n\r\n{}".utf8))
        defer { endpoint.stop() }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startDaemon(config: ["base_url": endpoint.baseURL, "max_attempts": 3])
        try harness.drop("giant", Harness.request("a giant header"))
        let record = try waitForFailure(harness, "giant")
        #expect(record["kind"] as? String == "response-too-large")
        #expect(endpoint.count == 1, "not retried: the endpoint would send the same head again")
    }
}

/// One answer asking for a day's pause must not stop the endpoint for a day.
@Suite(.serialized) struct EndpointPauseIntegrationTests {
    @Test(arguments: ["retry-after", "x-ratelimit"])
    func anEndpointPauseIsCappedByMaxRetryAfter(asking: String) throws {
        let fault: [String: Any] = asking == "retry-after"
            ? ["status": 429, "retry_after": 100_000]
            : ["headers": ["x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "100000s"]]
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_retry_after_seconds": 1, "concurrency": 1])
        try harness.drop("first", Harness.request("ask for a long pause", stub: ["faults": [fault]]))
        try waitUntil("the first request ended", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("first"))
                || FileManager.default.fileExists(atPath: harness.layout.failedRequest("first"))
        }
        try harness.drop("second", Harness.request("after the pause"))
        try waitUntil("the second request has a result", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("second"))
        }
        #expect(try harness.arrivals(of: "after the pause").count == 1)
    }

    /// One answer asking for a pause of a day from the first of two endpoints: the request
    /// that got it goes on to the second, and so does a new one. Before, the first failed
    /// at once ("more than max_retry_after_seconds") without trying the second, and the
    /// new one waited for the first endpoint's pause: an hour.
    @Test func aLongPauseOfTheFirstEndpointSendsRequestsToTheSecond() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "primary", "base_url": harness.stubURL],
                                                       ["name": "secondary", "base_url": harness.stubURL]]])
        try harness.drop("paused", Harness.request("asked to wait a day", stub: ["faults": [["status": 429, "retry_after": 86_400]]]))
        try waitUntil("the first request is answered", timeout: 30) { Syscall.isPresent(harness.layout.result("paused")) }
        let attempts = try #require(try harness.record("paused")["attempts"] as? [[String: Any]])
        #expect(attempts.map { $0["endpoint"] as? String } == ["primary", "secondary"], "\(attempts)")
        try harness.drop("later", Harness.request("sent while the first endpoint is paused"))
        try waitUntil("the second request is answered", timeout: 30) { Syscall.isPresent(harness.layout.result("later")) }
        let later = try #require(try harness.record("later")["attempts"] as? [[String: Any]])
        #expect(later.map { $0["endpoint"] as? String } == ["secondary"], "\(later)")
    }

    /// A second endpoint of another api is nowhere else to go: a chat request asked to wait
    /// past max_retry_after_seconds fails at once, sent once, as with one endpoint.
    @Test func aPauseWithNoOtherEndpointOfItsAPIFailsTheRequest() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_retry_after_seconds": 60,
                                         "endpoints": [["name": "openai", "base_url": harness.stubURL],
                                                       ["name": "anthropic", "base_url": harness.stubURL, "api": "anthropic"]]])
        let prompt = "asked to wait two hours, no other chat endpoint"
        try harness.drop("alone", Harness.request(prompt, stub: ["faults": [["status": 429, "retry_after": 7200]]]))
        try waitUntil("the request fails", timeout: 30) { Syscall.isPresent(harness.layout.errorRecord("alone")) }
        let record = try harness.json(harness.layout.errorRecord("alone"))
        #expect((record["message"] as? String)?.contains("7200") == true, "\(record)")
        #expect(try harness.arrivals(of: prompt).count == 1, "not sent again")
    }
}

/// Hooks run with an allow-list environment, and what they print reaches the log escaped.
@Suite(.serialized) struct HookHardeningTests {
    @Test func aKeyUnderAnyNameNeverReachesAHookNorTheLog() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: [
            "api_key_env": "MY_LLM_TOKEN",
            "on_complete": "env; printf 'red\\033[31m\\n'",
        ], environment: ["MY_LLM_TOKEN": Harness.secret, "SOME_PASSWORD": Harness.secret])
        try harness.drop("hooked", Harness.request("hook me"))
        try waitUntil("the hook's output is logged", timeout: 20) { harness.log.contains("hook ran id=hooked") }
        let line = try #require(harness.log.split(separator: "\n").first { $0.contains("hook ran id=hooked") })
        #expect(line.contains("LLMSPOOL_ID=hooked"), "the hook's output is in the log line: \(line)")
        #expect(line.contains("red\\x1b[31m\\x0a"), "escaped once: \(line)")
        #expect(!line.contains("MY_LLM_TOKEN") && !line.contains("SOME_PASSWORD"))
        #expect(!harness.log.contains(Harness.secret))
        #expect(harness.filesContainingSecret().isEmpty)
    }
}

/// A request whose answer crashes the daemon is failed after three crashes in a row
/// instead of crashing every restart.
@Suite(.serialized) struct CrashLoopTests {
    /// A kill -9 is not a crash: a request in flight at three of them is still answered.
    @Test func killsAreNotCrashes() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let slow: [String: Any] = ["header_delay_ms": 5000]
        try harness.drop("slow", Harness.request("in flight at every kill", stub: ["faults": [slow, slow, slow]]))
        for round in 1...3 {
            try harness.startDaemon(waitUntilWatching: false)
            try waitUntil("attempt \(round) reached the stub", timeout: 20) { try harness.arrivals(of: "in flight at every kill").count == round }
            harness.killDaemon()
        }
        try harness.startDaemon()
        try waitUntil("slow is answered", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.result("slow")) }
        #expect(!FileManager.default.fileExists(atPath: harness.layout.failedRequest("slow")))
    }

    /// A first attempt's start is journaled, not recorded (`StartJournal`). A stop or a
    /// `kill -9` during it used to drop the journal unread at the next start, and the
    /// request came back with a new `first_seen`: its `max_lifetime_seconds` began again.
    @Test(arguments: ["stop", "kill"]) func aRequestInFlightWhenTheDaemonEndsKeepsItsFirstSeen(how: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.drop("long", Harness.request("in flight at the end", stub: ["faults": [["header_delay_ms": 60_000]]]))
        try harness.startDaemon()
        try waitUntil("the request reached the stub", timeout: 20) { try harness.arrivals(of: "in flight at the end").count == 1 }
        #expect(TaskRecord.load(harness.layout, id: "long") == nil, "a first attempt has no record while it runs")
        let ended = Date()
        if how == "stop" { harness.stopDaemon() } else { harness.killDaemon() }
        usleep(1_100_000)
        try harness.startDaemon()
        try waitUntil("sent again and answered", timeout: 20) { Syscall.isPresent(harness.layout.result("long")) }
        #expect(try harness.arrivals(of: "in flight at the end").count == 2)
        let record = try #require(TaskRecord.load(harness.layout, id: "long"))
        #expect(record.history.firstSeen < ended, "first_seen \(record.history.firstSeen) is from before the daemon ended (\(ended))")
        #expect(record.history.unfinishedStarts <= 1, "no crash counted: \(record.history.unfinishedStarts)")
    }

    @Test func aRequestInFlightAtThreeCrashesInARowFails() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let crash: [String: Any] = ["headers": ["X-Stub-Crash": "1"]]
        try harness.drop("poison", Harness.request("crash the daemon", stub: ["faults": [crash, crash, crash, crash, crash]]))
        for round in 1...3 {
            try harness.startDaemon(environment: ["LLMSPOOL_TEST_CRASH_HEADER": "x-stub-crash"], waitUntilWatching: false)
            let status = try harness.waitForDaemonExit(timeout: 30)
            #expect(status != 0, "round \(round): the test-only trigger crashed the daemon")
            // The first start is in the start journal; the restart after the crash writes it
            // as the record, which each later start then updates itself.
            let journal = (try? Data(contentsOf: URL(fileURLWithPath: harness.layout.startJournal))).map { Array($0) } ?? []
            let journaled = StartJournal.frames(journal).filter { $0.name == "poison.json" }
                .compactMap { TaskRecord.decode($0.record)?.history.unfinishedStarts }
            #expect(journaled == (round == 1 ? [1] : []), "round \(round)")
            #expect(TaskRecord.load(harness.layout, id: "poison")?.history.unfinishedStarts == (round == 1 ? nil : round), "round \(round)")
        }
        #expect(try harness.arrivals(of: "crash the daemon").count == 3)
        try harness.startDaemon(environment: ["LLMSPOOL_TEST_CRASH_HEADER": "x-stub-crash"])
        try waitUntil("poison is in failed/", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.failedRequest("poison"))
        }
        let record = try harness.json(harness.layout.errorRecord("poison"))
        #expect(record["kind"] as? String == "crash-loop")
        #expect(try harness.arrivals(of: "crash the daemon").count == 3, "not sent a fourth time")
        try harness.drop("after", Harness.request("a healthy one"))
        try waitUntil("the daemon still answers", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("after"))
        }
    }

    /// `kill -ABRT` from outside (for a core dump) ends the daemon as the signal's default
    /// action does, and is no crash: before, the daemon lived on with a crash marker left,
    /// and its next start counted the requests in flight against them.
    @Test func aCrashSignalSentFromOutsideEndsTheDaemonWithoutAMarker() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.drop("slow", Harness.request("in flight at the signal", stub: ["header_delay_ms": 10_000]))
        try harness.startDaemon()
        try waitUntil("the request reached the stub", timeout: 20) { try harness.arrivals(of: "in flight at the signal").count == 1 }
        harness.signalDaemon(SIGABRT)
        #expect(try harness.waitForDaemonExit(timeout: 30) != 0)
        #expect(!FileManager.default.fileExists(atPath: harness.layout.state + "/.crashed"))
        try harness.startDaemon()
        #expect(!harness.log.contains("the previous run of the daemon crashed"))
    }

    /// A request held while in flight leaves a `cancelled` record of the very file, which
    /// `release` puts back unchanged: its next starts must still count, though the record
    /// on disk is not the crash's.
    @Test func aRequestHeldAndReleasedStillCountsItsCrashes() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let slow: [String: Any] = ["header_delay_ms": 10_000]
        let crash: [String: Any] = ["headers": ["X-Stub-Crash": "1"]]
        try harness.drop("poison", Harness.request("crash after a hold", stub: ["faults": [slow, crash, crash, crash, crash, crash]]))
        let environment = ["LLMSPOOL_TEST_CRASH_HEADER": "x-stub-crash"]
        try harness.startDaemon(environment: environment)
        try waitUntil("the first attempt reached the stub", timeout: 20) { try harness.arrivals(of: "crash after a hold").count == 1 }
        #expect(try harness.cli(["hold", "poison", "--spool", harness.layout.root]).status == 0)
        try waitUntil("the held request's attempt is recorded cancelled", timeout: 20) {
            (try? harness.record("poison"))?["status"] as? String == "cancelled"
        }
        #expect(try harness.cli(["release", "poison", "--spool", harness.layout.root]).status == 0)
        #expect(try harness.waitForDaemonExit(timeout: 30) != 0, "the released request's answer crashed the daemon")
        for round in 2...3 {
            try harness.startDaemon(environment: environment, waitUntilWatching: false)
            #expect(try harness.waitForDaemonExit(timeout: 30) != 0, "round \(round) crashed")
        }
        #expect(try harness.arrivals(of: "crash after a hold").count == 4)
        try harness.startDaemon(environment: environment)
        try waitUntil("poison is in failed/", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.failedRequest("poison"))
        }
        #expect(try harness.json(harness.layout.errorRecord("poison"))["kind"] as? String == "crash-loop")
        #expect(try harness.arrivals(of: "crash after a hold").count == 4, "not sent after its third crash")
    }
}

/// The upload sends the file intake validated, or nothing.
@Suite(.serialized) struct UploadIdentityTests {
    /// A hard link swapped in is refused unsent; a file written again in place while it
    /// waits is sent as it is now, once, validated anew: before, it went to failed/ as
    /// changed-after-validation, and an editor's save of a waiting prompt was lost.
    @Test func aQueuedRequestSwappedIsNeverSentAndOneShrunkInPlaceIsSentAsItIsNow() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let out = harness.layout.outgoing
        try harness.startDaemon(config: ["concurrency": 1])
        try harness.drop("a-blocker", Harness.request("hold the only slot", stub: ["latency_ms": 2000]))
        try waitUntil("the blocker reached the stub", timeout: 20) { try !harness.arrivals(of: "hold the only slot").isEmpty }
        // These wait, validated, behind it.
        try harness.drop("swapped", Harness.request("an honest request"))
        try harness.drop("shrunk", Harness.request("a request that will shrink " + String(repeating: "x", count: 500)))
        try harness.drop("broken", Harness.request("a request that will be saved broken"))
        try waitUntil("all three were validated", timeout: 20) {
            harness.log.contains("validated id=swapped") && harness.log.contains("validated id=shrunk") && harness.log.contains("validated id=broken")
        }
        let secret = harness.root + "/outside.json"
        try DurableFile.write(Array(try JSONSerialization.data(withJSONObject: Harness.request("SECRET-OUTSIDE"))), to: secret)
        // A hard link to a file outside the spool, renamed over the validated request.
        #expect(link(secret, "\(out)/.swapped.tmp") == 0)
        #expect(rename("\(out)/.swapped.tmp", "\(out)/swapped.json") == 0)
        // The other is cut short in place, still valid JSON.
        let short = Array(try JSONSerialization.data(withJSONObject: Harness.request("shrunk")))
        let fd = open("\(out)/shrunk.json", O_WRONLY | O_TRUNC)
        #expect(fd >= 0)
        _ = short.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        // The third is saved in place as something invalid: it is refused once the blocker
        // ends, not left in outgoing unjudged.
        let broken = open("\(out)/broken.json", O_WRONLY | O_TRUNC)
        #expect(broken >= 0)
        _ = Array("{\"model\": ".utf8).withUnsafeBytes { write(broken, $0.baseAddress, $0.count) }
        close(broken)
        try waitUntil("the link is in failed/ and the shrunk file answered", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.errorRecord("swapped"))
                && FileManager.default.fileExists(atPath: harness.layout.result("shrunk"))
        }
        #expect(try harness.arrivals(of: "SECRET-OUTSIDE").isEmpty, "the linked file was never sent")
        #expect(try harness.arrivals(of: "shrunk").count == 1, "the file as it is now, once")
        #expect(try harness.stubArrivals().filter { $0.prompt.hasPrefix("a request that will shrink") }.isEmpty, "the old content never")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.errorRecord("shrunk")))
        let swapped = try harness.json(harness.layout.errorRecord("swapped"))
        #expect((swapped["problem"] as? [String: Any])?["kind"] as? String == "hard-link")
        try waitUntil("the broken save is refused", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.errorRecord("broken")) }
        #expect(try harness.arrivals(of: "a request that will be saved broken").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: harness.layout.request("broken")))
    }
}

extension UploadIdentityTests {
    /// On a shared spool too: the old task lets go of its claim without a tombstone, and the
    /// new save is sent as soon as the slot frees. Before, the old task's end left a
    /// tombstone, and this very daemon took the new save for another's for lease_seconds.
    @Test func aSaveInPlaceWhileWaitingOnASharedSpoolIsSentWithoutWaitingOutATombstone() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 1, "leases": true, "lease_seconds": 60])
        try harness.drop("blocker", Harness.request("hold the only slot", stub: ["latency_ms": 1500]))
        try waitUntil("the blocker reached the stub", timeout: 20) { try !harness.arrivals(of: "hold the only slot").isEmpty }
        try harness.drop("q", Harness.request("the first save"))
        try waitUntil("q was validated", timeout: 20) { harness.log.contains("validated id=q") }
        let saved = Array(try JSONSerialization.data(withJSONObject: Harness.request("the second save")))
        let fd = open(harness.layout.request("q"), O_WRONLY | O_TRUNC)
        #expect(fd >= 0)
        _ = saved.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        try waitUntil("the second save is answered (well before a tombstone of 60 s would end)", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("q"))
        }
        #expect(try harness.arrivals(of: "the second save").count == 1)
        #expect(try harness.arrivals(of: "the first save").isEmpty)
        #expect(!harness.log.contains("cancelled: the request left outgoing while in flight id=q"), "a save is no cancellation")
    }
}

extension UploadIdentityTests {
    /// Rewritten in place with the same size and its modification time put back (`cp -p`,
    /// `touch -r`): the start knows it by its fingerprint, and the draft it now is stays
    /// unsent. Before, the new bytes were sent under the old validation.
    @Test func aSaveOfTheSameSizeAndTimeIsNotSentUnvalidated() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 1])
        try harness.drop("blocker", Harness.request("hold the only slot", stub: ["latency_ms": 1500]))
        try waitUntil("the blocker reached the stub", timeout: 20) { try !harness.arrivals(of: "hold the only slot").isEmpty }
        let first = Array(#"{"model":"stub-model","messages":[{"role":"user","content":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}"#.utf8)
        let draft = Array(#"{"draft":true,"model":"stub-model","messages":[{"role":"user","content":"BBBBBBBBBBBBBBBBB"}]}"#.utf8)
        #expect(first.count == draft.count)
        try harness.drop("same", bytes: first)
        try waitUntil("it was validated", timeout: 20) { harness.log.contains("validated id=same") }
        let path = harness.layout.request("same")
        let before = try Syscall.lstat(path)
        let fd = open(path, O_WRONLY | O_TRUNC)
        #expect(fd >= 0)
        _ = draft.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(fd, &times) == 0)
        close(fd)
        try waitUntil("the draft is seen as one", timeout: 30) { harness.log.contains("left in outgoing as a draft") && harness.log.contains("id=same") }
        try waitUntil("the blocker is answered", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.result("blocker")) }
        try waitUntil("the old task let go of the saved file", timeout: 30) { harness.log.contains("saved again after it was validated; it is read again as a new task id=same") }
        #expect(try harness.stubArrivals().filter { $0.prompt.hasPrefix("BBBB") || $0.prompt.hasPrefix("AAAA") }.isEmpty, "neither content was sent")
        #expect(FileManager.default.fileExists(atPath: path), "the draft stays in outgoing")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.errorRecord("same")))
    }
}

/// Spool folders pulled out from under the daemon are recreated, and a write that cannot
/// succeed holds requests back instead of sending them again and again.
@Suite(.serialized) struct SpoolFolderTests {
    @Test(arguments: ["failed", "incoming", "state"]) func aDeletedFolderIsRecreatedAndTheRequestSentOnce(folder: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let path = harness.layout.root + "/" + folder
        try FileManager.default.removeItem(atPath: path)
        let refused = folder == "failed"
        let prompt = "after \(folder) was deleted"
        try harness.drop("late", Harness.request(prompt, stub: refused ? ["status": 400] : nil))
        let outcome = refused ? harness.layout.errorRecord("late") : harness.layout.result("late")
        try waitUntil("late has its outcome", timeout: 30) { FileManager.default.fileExists(atPath: outcome) }
        #expect(try harness.arrivals(of: prompt).count == 1)
        #expect(harness.log.contains("a spool folder was missing; recreated"))
    }

    /// `chattr`, when this machine can make a folder unwritable even for root; nil, with
    /// the reason printed, when it cannot.
    static func chattrForRoot() -> String? {
        guard Harness.isRoot, let chattr = Harness.which("chattr") else {
            print("skipped: needs root and chattr to make a folder unwritable for root")
            return nil
        }
        return chattr
    }

    /// Sets the immutable flag on `folder`; false, with the reason printed, when its
    /// filesystem has none.
    static func makeImmutable(_ folder: String, with chattr: String) -> Bool {
        guard (try? Harness.run(chattr, ["+i", folder])) != nil else {
            print("skipped: the filesystem does not support the immutable flag")
            return false
        }
        return true
    }

    @Test func anUnwritableIncomingHoldsRequestsUnsent() throws {
        guard let chattr = Self.chattrForRoot() else { return }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 0.2])
        let incoming = harness.layout.incoming
        guard Self.makeImmutable(incoming, with: chattr) else { return }
        defer { _ = try? Harness.run(chattr, ["-i", incoming]) }
        try harness.drop("held", Harness.request("hold me while incoming is immutable"))
        try waitUntil("the daemon held the request several times", timeout: 30) {
            harness.log.components(separatedBy: "nothing is sent until it can").count > 4
        }
        #expect(try harness.arrivals(of: "hold me while incoming is immutable").count == 1)
        _ = try Harness.run(chattr, ["-i", incoming])
        try waitUntil("held has its result", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.result("held")) }
        #expect(try harness.arrivals(of: "hold me while incoming is immutable").count == 2, "one call that could not be kept, one that was")
    }
}

/// Past a success's commit point (its result renamed into `incoming`) a step that fails
/// leaves the request ended: it is not sent again, no failure is written for it, and a
/// later scan removes it.
@Suite(.serialized) struct CommittedOutcomeTests {
    /// Drops a streamed request and makes `outgoing` immutable while it streams, so that
    /// its result is published and its removal fails; false when the flag cannot be set.
    /// The caller clears the flag.
    static func publishWhileOutgoingIsImmutable(_ harness: Harness, _ id: String, _ prompt: String, chattr: String) throws -> Bool {
        try harness.drop(id, Harness.request(prompt, stream: true, stub: ["tokens": 20, "token_delay_ms": 100]))
        try waitUntil("the stream is under way", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.partial(id)) }
        guard SpoolFolderTests.makeImmutable(harness.layout.outgoing, with: chattr) else { return false }
        try waitUntil("the removal's failure is logged", timeout: 30) {
            harness.log.contains("the result is published, but the request could not be removed from outgoing")
        }
        return true
    }

    @Test func aRequestThatCannotBeRemovedAfterItsResultIsNotSentAgain() throws {
        guard let chattr = SpoolFolderTests.chattrForRoot() else { return }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 0.2, "rescan_interval_seconds": 1])
        let outgoing = harness.layout.outgoing
        let prompt = "a stream that ends while outgoing is immutable"
        defer { _ = try? Harness.run(chattr, ["-i", outgoing]) }
        guard try Self.publishWhileOutgoingIsImmutable(harness, "stuck", prompt, chattr: chattr) else { return }
        #expect(FileManager.default.fileExists(atPath: harness.layout.result("stuck")))
        // Several rescans while the request cannot be removed: none sends it again.
        try waitUntil("two more rescans", timeout: 30) { harness.log.components(separatedBy: "cannot complete the clean-up").count > 2 }
        _ = try Harness.run(chattr, ["-i", outgoing])
        try waitUntil("a later scan removes the request", timeout: 30) { !FileManager.default.fileExists(atPath: harness.layout.request("stuck")) }
        #expect(try harness.arrivals(of: prompt).count == 1, "sent once")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.errorRecord("stuck")), "no failure written for a request that succeeded")
        #expect(!harness.log.contains("outcome not written"), "never postponed as if nothing had been published")
        #expect(harness.log.components(separatedBy: "done (completed after a restart)").count == 1, "reported done once, by the commit")
    }

    /// Runs `body` beside a daemon with an `on_failure` hook that writes "<id> record" (or
    /// "<id> none" when `$LLMSPOOL_ERROR` names no file) to `hooked`, once request `id`,
    /// refused after 1.5 s, has had its failure committed while `failed/` is immutable;
    /// `lift` clears the flag (cleared at the end anyway). Skipped, printed, where the flag
    /// cannot be set.
    static func withFailureWhileFailedIsImmutable(_ id: String, _ prompt: String,
                                                  _ body: (_ harness: Harness, _ hooked: String, _ config: [String: Any],
                                                           _ lift: () throws -> Void) throws -> Void) throws {
        guard let chattr = SpoolFolderTests.chattrForRoot() else { return }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let hooked = harness.root + "/hooked.log"
        let hook = ["/bin/sh", "-c", "if [ -f \"$LLMSPOOL_ERROR\" ]; then echo \"$LLMSPOOL_ID record\"; else echo \"$LLMSPOOL_ID none\"; fi >> \(hooked)"]
        let config: [String: Any] = ["retry_max_seconds": 0.2, "rescan_interval_seconds": 1, "on_failure": hook]
        try harness.startDaemon(config: config)
        try harness.drop(id, Harness.request(prompt, stub: ["status": 400, "latency_ms": 1500]))
        try waitUntil("the request is sent", timeout: 30) { try harness.arrivals(of: prompt).count == 1 }
        let failed = harness.layout.failed
        defer { _ = try? Harness.run(chattr, ["-i", failed]) }
        guard SpoolFolderTests.makeImmutable(failed, with: chattr) else { return }
        try waitUntil("the failure is committed, its publication cut short", timeout: 30) {
            harness.log.contains("the failure is recorded, but publishing it did not finish")
        }
        try body(harness, hooked, config) { _ = try Harness.run(chattr, ["-i", failed]) }
    }

    /// A failure committed while `failed/` cannot be written: its `on_failure` hook waits
    /// until a later scan has written the error record its `LLMSPOOL_ERROR` names, and runs
    /// once. Before, it ran at the commit, naming a record that did not exist.
    @Test func aFailuresHookWaitsForItsErrorRecord() throws {
        let prompt = "refused while failed is immutable"
        try Self.withFailureWhileFailedIsImmutable("refused", prompt) { harness, hooked, _, lift in
            // Two rescans that cannot finish it: a hook started at the commit has run long before.
            try waitUntil("two rescans", timeout: 30) { harness.log.components(separatedBy: "cannot complete the clean-up").count > 2 }
            #expect(!Syscall.isPresent(hooked), "no hook while the error record is not written: \((try? String(contentsOfFile: hooked, encoding: .utf8)) ?? "")")
            try lift()
            try waitUntil("the hook runs", timeout: 30) { Syscall.isPresent(hooked) }
            try waitUntil("the request is moved to failed", timeout: 30) { Syscall.isPresent(harness.layout.failedRequest("refused")) }
            #expect(try String(contentsOfFile: hooked, encoding: .utf8) == "refused record\n")
            #expect(try harness.arrivals(of: prompt).count == 1, "sent once")
            try waitUntil("the hook's note goes once it has run", timeout: 30) { harness.files(in: harness.layout.pendingHooks).isEmpty }
        }
    }

    /// The same failure, its request deleted while `failed/` still cannot be written, then
    /// the daemon killed: the next start writes the error record from the task record and
    /// runs the hook. Before, the note was dropped at that start and no hook ever ran.
    @Test func aFailuresHookOwedWhenItsRequestWasDeletedRunsAtTheNextStart() throws {
        let prompt = "refused, then deleted, while failed is immutable"
        try Self.withFailureWhileFailedIsImmutable("gone", prompt) { harness, hooked, config, lift in
            try Syscall.unlink(harness.layout.request("gone"))
            try waitUntil("the deletion is seen and the record still cannot be written", timeout: 30) {
                harness.log.contains("the failed request left outgoing before its error record could be written")
            }
            harness.killDaemon()
            #expect(!Syscall.isPresent(hooked), "no hook while the error record is not written")
            try lift()
            try harness.startDaemon(config: config)
            try waitUntil("the hook runs at the start", timeout: 30) { Syscall.isPresent(hooked) }
            try waitUntil("the hook's note goes once it has run", timeout: 30) { harness.files(in: harness.layout.pendingHooks).isEmpty }
            #expect(try String(contentsOfFile: hooked, encoding: .utf8) == "gone record\n", "once, seeing its record")
            #expect(try harness.json(harness.layout.errorRecord("gone"))["kind"] as? String == "http")
            #expect(try harness.arrivals(of: prompt).count == 1, "sent once")
        }
    }

    /// The request that could not be removed is deleted by its producer before any scan
    /// cleans it up: the daemon stops waiting for that clean-up (it would wait for its life).
    @Test func aCommittedRequestDeletedBeforeItsCleanUpIsNotAwaitedAnyMore() throws {
        guard let chattr = SpoolFolderTests.chattrForRoot() else { return }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // No rescan in the test's time: only the deletion can end the wait.
        try harness.startDaemon(config: ["retry_max_seconds": 0.2, "rescan_interval_seconds": 3600])
        let outgoing = harness.layout.outgoing
        defer { _ = try? Harness.run(chattr, ["-i", outgoing]) }
        guard try Self.publishWhileOutgoingIsImmutable(harness, "gone", "deleted before its clean-up", chattr: chattr) else { return }
        _ = try Harness.run(chattr, ["-i", outgoing])
        #expect(unlink(harness.layout.request("gone")) == 0)
        try waitUntil("the daemon stops waiting for the clean-up", timeout: 30) {
            harness.log.contains("the ended request left outgoing before its clean-up")
        }
        #expect(!harness.log.contains("the ended request's clean-up is complete"), "no scan ran")
    }
}

/// A stream whose one event never ends: the request fails once the event passes
/// `max_event_bytes`, instead of holding it whole (a hostile server's 200 MB line took the
/// daemon to 477 MB, four of them to 1.2 GB), and is not sent again: another attempt would
/// be paid for and fail alike, as past `max_response_bytes`.
@Suite(.serialized) struct EndlessEventTests {
    @Test func anEventThatNeverEndsFailsTheRequestAtTheLimit() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let limit = 4 << 20
        try harness.startDaemon(config: ["max_event_bytes": limit])
        let prompt = "an endless line"
        try harness.drop("endless", Harness.request(prompt, stream: true, stub: ["faults": [["endless_line_bytes": 100 << 20]]]))
        try waitUntil("endless fails", timeout: 60) { Syscall.isPresent(harness.layout.errorRecord("endless")) }
        let record = try harness.json(harness.layout.errorRecord("endless"))
        #expect(record["kind"] as? String == "response-too-large", "\(record)")
        #expect((record["message"] as? String)?.contains("passed \(limit) bytes without ending (max_event_bytes)") == true, "\(record)")
        #expect(record["attempts"] as? Int == 1, "not sent again: \(record)")
        let attempts = try #require(try harness.record("endless")["attempts"] as? [[String: Any]])
        let received = try #require(attempts.first?["bytes_received"] as? Int)
        #expect(received < 2 * limit, "stopped at the limit, not after the whole line: \(received)")
        #expect(try harness.arrivals(of: prompt).count == 1)
    }
}

/// A provider that repeats the key it was sent in its error: the key reaches no record
/// and no log line.
@Suite(.serialized) struct EchoedKeyTests {
    @Test func aKeyTheProviderEchoesIsBlankedOut() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("echo", Harness.request("a rejected key", stub: ["status": 401, "echo_key": true]))
        try waitUntil("echo failed", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.errorRecord("echo")) }
        let failure = try String(contentsOfFile: harness.layout.errorRecord("echo"), encoding: .utf8)
        #expect(failure.contains("Incorrect API key provided: <redacted>"), "\(failure)")
        var everything = failure + harness.log
        everything += try String(contentsOfFile: harness.layout.taskRecord("echo"), encoding: .utf8)
        #expect(!everything.contains(Harness.secret), "the key is in no record and no log line")
        #expect(!everything.contains("SECRET"), "nor any part of it")
    }

    /// A provider (or a proxy) that sends the key back as the request's id, on a failure and
    /// then on the success: before, it was kept as `request_id` in the task record, the
    /// attempt log and `show`.
    @Test func aKeyEchoedAsTheRequestsIDIsNotKept() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let echo: [String: Any] = ["x-request-id": Harness.secret]
        try harness.drop("echo-id", Harness.request("an id that is the key", stub: ["faults": [["status": 500, "headers": echo], ["headers": echo]]]))
        try waitUntil("echo-id answered", timeout: 30) { Syscall.isPresent(harness.layout.result("echo-id")) && !Syscall.isPresent(harness.layout.request("echo-id")) }
        #expect(try harness.arrivals(of: "an id that is the key").count == 2)
        let shown = try harness.cli(["show", "echo-id", "--spool", harness.layout.root])
        var everything = harness.log + shown.stdout + shown.stderr
        for folder in [harness.layout.state, harness.layout.incoming, harness.layout.failed] {
            for name in harness.files(in: folder) {
                everything += (try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)) ?? ""
            }
        }
        #expect(everything.contains("attempts"), "the record was read")
        #expect(!everything.contains(Harness.secret), "the key is in no file of the spool, no log line and not in show")
    }
}

@Suite(.serialized) struct ByteOrderMarkIntegrationTests {
    @Test(arguments: [false, true]) func aRequestWithAByteOrderMarkIsSentWithoutIt(large: Bool) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        // Past the small-body limit the body is streamed from the file, not read at once.
        let prompt = "with a byte order mark" + (large ? " " + String(repeating: "y", count: 70_000) : "")
        let body = Array(try JSONSerialization.data(withJSONObject: Harness.request(prompt, stream: true)))
        try harness.drop("marked", bytes: [0xEF, 0xBB, 0xBF] + body)
        try waitUntil("marked has a result", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.result("marked")) }
        #expect(try harness.arrivals(of: prompt).count == 1, "the stub parsed the body: the mark was not sent")
    }
}

/// A hostile name reaches the log escaped once, bidi and zero-width characters included.
@Suite(.serialized) struct LogEscapingTests {
    @Test func anUnsafeNameIsLoggedEscapedOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let name = "evil\n\u{202E}gnp.\u{200B}x.json"
        let body = Array(try JSONSerialization.data(withJSONObject: Harness.request("escaped once")))
        let hidden = "\(harness.layout.outgoing)/.evil.tmp"
        try DurableFile.write(body, to: hidden)
        #expect(rename(hidden, "\(harness.layout.outgoing)/\(name)") == 0)
        try waitUntil("the name was logged", timeout: 20) { harness.log.contains("renamed a request to a safe id") }
        let line = try #require(harness.log.split(separator: "\n").first { $0.contains("renamed a request to a safe id") })
        #expect(line.contains(#"file=evil\x0a\u{202e}gnp.\u{200b}x.json"#), "\(line)")
        #expect(!line.contains("\u{202E}") && !line.contains("\u{200B}"))
    }
}

/// A spool root replaced by a symbolic link to another folder while running is refused,
/// not followed. (A link to the very folder it replaced leads where the root did.)
@Suite(.serialized) struct SpoolRootTests {
    @Test func aRootReplacedByALinkHoldsEverySend() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 0.2, "rescan_interval_seconds": 1])
        let root = harness.layout.root
        let other = harness.root + "/other-spool"
        try SpoolLayout(root: other).create()
        #expect(rename(root, root + ".moved") == 0)
        #expect(symlink(other, root) == 0)
        // Into the other folder, through the link: found there by a rescan.
        try harness.drop("through-link", Harness.request("sent through a replaced root"))
        try waitUntil("the daemon refused the replaced root", timeout: 20) { harness.log.contains("the spool's folders are not the ones the daemon started with") }
        try waitUntil("the request was held a few times", timeout: 20) {
            harness.log.components(separatedBy: "is not the folder the daemon started with").count > 3
        }
        #expect(try harness.arrivals(of: "sent through a replaced root").isEmpty)
        #expect(harness.files(in: other + "/incoming").isEmpty && harness.files(in: other + "/failed").isEmpty)
        #expect(unlink(root) == 0)
        #expect(rename(root + ".moved", root) == 0)
        #expect(rename(other + "/outgoing/through-link.json", harness.layout.request("through-link")) == 0)
        try waitUntil("the request is answered once the root is back", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("through-link"))
        }
        #expect(try harness.arrivals(of: "sent through a replaced root").count == 1)
    }
}

/// With a daemon running, `status` takes its counts from the live status instead of
/// reading every record.
@Suite(.serialized) struct StatusCountTests {
    @Test func statusUsesTheDaemonsCounts() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.drop("before", Harness.request("finished before the start"))
        try harness.startDaemon()
        try waitUntil("before is done", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("before")) }
        try harness.drop("after", Harness.request("finished after the start"))
        try waitUntil("after is done", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("after")) }
        func status() throws -> [String: Any] {
            try #require(JSONObject(try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout))
        }
        try waitUntil("the daemon publishes its counts", timeout: 20) {
            LiveStatus.read(harness.layout)?.totals?.done == 2
        }
        #expect(try status()["done"] as? Int == 2)
        let tokens = try #require(try status()["tokens"] as? [String: Int])
        #expect((tokens["total_tokens"] ?? 0) > 0)
        // A file the daemon did not publish is not counted while it runs: the count is its own.
        try DurableFile.write(Array("{}".utf8), to: harness.layout.result("planted"))
        let planted = try status()
        #expect(planted["done"] as? Int == 2, "\(planted)")
        #expect(harness.stopDaemon() == 0)
        #expect(try status()["done"] as? Int == 3, "without a daemon, status counts the files")
    }
}

/// Numbers from the network past Int's range reach no trapping conversion.
@Suite(.serialized) struct HugeNumberTests {
    @Test func absurdWaitsAndCountsNeitherCrashNorPause() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_retry_after_seconds": 1])
        // Digits past Double's range (a delay is digits only: `1e300` is no delay at all).
        let huge = String(repeating: "9", count: 400)
        try harness.drop("huge", Harness.request("wait 1e400 s", stub: ["faults": [["status": 429, "retry_after": huge]]]))
        try harness.drop("huge-ms", Harness.request("wait 1e400 ms", stub: ["faults": [["status": 503, "retry_after_ms": huge]]]))
        try harness.drop("huge-reset", Harness.request("reset in 1e300 s", stub: ["faults": [[
            "headers": ["x-ratelimit-remaining-tokens": "-1e300", "x-ratelimit-reset-tokens": "1e300s"]]]]))
        for id in ["huge", "huge-ms"] {
            try waitUntil("\(id) failed", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.errorRecord(id)) }
            let record = try harness.json(harness.layout.errorRecord(id))
            #expect((record["message"] as? String)?.contains("max_retry_after_seconds") == true, "\(record)")
        }
        try waitUntil("huge-reset answered", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("huge-reset")) }
        try harness.drop("next", Harness.request("still running"))
        try waitUntil("the daemon still answers", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("next")) }
        #expect(harness.daemonIsRunning)
    }
}

/// The daemon's log read through a pipe whose reader goes away (`llmspool run 2>&1 | head`):
/// the daemon died of SIGPIPE at its next log line, its requests left unanswered.
@Suite(.serialized) struct LogReaderGoneTests {
    @Test func aLogPipeWithoutReaderDoesNotEndTheDaemon() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.writeConfig([:])
        let pipe = Pipe()
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: Harness.binary)
        daemon.arguments = ["run", "--config", harness.configPath]
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAI_API_KEY"] = Harness.secret
        daemon.environment = environment
        daemon.standardOutput = pipe
        daemon.standardError = pipe
        try daemon.run()
        defer {
            if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
            daemon.waitUntilExit()
        }
        // The reader takes the first line, then goes.
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")) {
            let piece = pipe.fileHandleForReading.availableData
            if piece.isEmpty { break }
            first.append(piece)
        }
        try pipe.fileHandleForReading.close()
        try harness.drop("piped", Harness.request("log reader gone"))
        try waitUntil("the request is answered", timeout: 30) {
            Syscall.isPresent(harness.layout.result("piped")) || !daemon.isRunning
        }
        #expect(daemon.isRunning, "the daemon is alive (it ended with status \(daemon.isRunning ? 0 : daemon.terminationStatus))")
        #expect(Syscall.isPresent(harness.layout.result("piped")))
    }
}
