import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// What happens to the daemon and the machine around it: signals, deletions, a full disk,
/// a flood of events, a folder pulled away, writers that take their time.
@Suite(.serialized) struct CrashSafetyTests {
    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    func partialHasContent(_ harness: Harness, _ id: String) -> Bool {
        ((try? Syscall.lstat(harness.layout.partial(id)))?.st_size ?? 0) > 200
    }

    @Test func sigtermLetsTransfersInFlightFinish() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("inflight", Harness.request("finish me", stream: true, stub: ["tokens": 15, "token_delay_ms": 100]))
        try waitUntil("the answer streams", timeout: 20) { partialHasContent(harness, "inflight") }
        #expect(harness.stopDaemon() == 0)
        #expect(exists(harness.layout.result("inflight")), "the transfer finished within the grace period")
        #expect(Harness.content(of: try harness.json(harness.layout.result("inflight"))) == StubAnswer.content(prompt: "finish me", tokens: 15))
        #expect(!exists(harness.layout.request("inflight")))
    }

    @Test func pastTheGracePeriodTheRestWaitsForTheNextRun() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["shutdown_grace_seconds": 0.3])
        let prompt = "too long for the grace period"
        try harness.drop("long", Harness.request(prompt, stream: true, stub: ["tokens": 40, "token_delay_ms": 100]))
        try waitUntil("the answer streams", timeout: 20) { partialHasContent(harness, "long") }
        let stopped = Date()
        #expect(harness.stopDaemon() == 0)
        #expect(Date().timeIntervalSince(stopped) < 3, "the grace period bounds the wait")
        #expect(exists(harness.layout.request("long")), "the request stays for the next run")
        #expect(!exists(harness.layout.partial("long")), "its partial answer is dropped")
        #expect(!exists(harness.layout.result("long")))
        try harness.startDaemon()
        try waitUntil("the next run finishes it", timeout: 30) { exists(harness.layout.result("long")) }
        #expect(Harness.content(of: try harness.json(harness.layout.result("long"))) == StubAnswer.content(prompt: prompt, tokens: 40))
    }

    @Test func deletingARequestInFlightCancelsIt() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("doomed", Harness.request("cancel me", stream: true, stub: ["tokens": 100, "token_delay_ms": 100]))
        try waitUntil("the answer streams", timeout: 20) { partialHasContent(harness, "doomed") }
        try Syscall.unlink(harness.layout.request("doomed"))
        try waitUntil("the cancellation is recorded", timeout: 10) {
            (try? harness.record("doomed"))?["status"] as? String == "cancelled"
        }
        #expect(!exists(harness.layout.partial("doomed")))
        #expect(!exists(harness.layout.result("doomed")))
        #expect(!exists(harness.layout.errorRecord("doomed")))
        #expect(harness.log.contains("cancelled: the request left outgoing while in flight id=doomed"))
    }

    @Test func aDeletedOutgoingFolderIsWatchedAgain() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try FileManager.default.removeItem(atPath: harness.layout.outgoing)
        try waitUntil("the daemon watches the folder again", timeout: 10) {
            harness.log.contains("watching outgoing again")
        }
        #expect(exists(harness.layout.outgoing), "the daemon recreated the folder")
        try harness.drop("after", Harness.request("after the folder came back"))
        try waitUntil("the request is answered", timeout: 20) { exists(harness.layout.result("after")) }
        #expect(harness.log.components(separatedBy: "watching outgoing again").count == 2, "one removal, one re-watch")
        // Moved away and replaced by a new folder: the same.
        try Syscall.rename(harness.layout.outgoing, harness.root + "/moved-away")
        try waitUntil("the daemon notices the move", timeout: 10) {
            harness.log.components(separatedBy: "watching outgoing again").count == 3
        }
        try harness.drop("after-move", Harness.request("after the folder moved"))
        try waitUntil("the request is answered", timeout: 20) { exists(harness.layout.result("after-move")) }
        // A deleted folder's watch is gone with it: asking libinotifytools to remove it made
        // the library print an unstructured "Failed to remove watch ... Unknown error -1".
        #expect(!harness.log.contains("Failed to remove watch"), "only the daemon's own lines in its log")
    }

    @Test func aWriterThatTakesItsTimeIsNotJudgedEarly() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["settle_seconds": 1.5])
        let path = harness.layout.request("slow-writer")
        let whole = Array(#"{"model": "m", "messages": [{"role": "user", "content": "written in two steps"}]}"#.utf8)
        // First half, closed: invalid JSON for now.
        try DurableFile.write(Array(whole.prefix(20)), to: harness.root + "/half", syncDirectory: false)
        try Harness.run("/bin/cp", [harness.root + "/half", path])
        usleep(600_000)
        #expect(!exists(harness.layout.failedRequest("slow-writer")), "not judged within the settle period")
        let fd = try Syscall.open(path, O_WRONLY | O_APPEND)
        try Syscall.writeAll(fd, Array(whole.dropFirst(20)))
        Syscall.close(fd)
        try waitUntil("the completed request is answered", timeout: 20) { exists(harness.layout.result("slow-writer")) }
        // A file that stays broken is failed once it has been quiet for the settle period.
        try Harness.run("/bin/cp", [harness.root + "/half", harness.layout.request("stays-broken")])
        let written = Date()
        try waitUntil("the broken request is failed", timeout: 20) { exists(harness.layout.errorRecord("stays-broken")) }
        #expect(Date().timeIntervalSince(written) >= 1.4)
        #expect(try harness.json(harness.layout.errorRecord("stays-broken"))["kind"] as? String == "invalid-request")
    }

    @Test(.enabled(if: Harness.isRoot, "lowering fs.inotify.max_queued_events needs root"))
    func anInotifyOverflowLosesNothing() throws {
        let limitPath = "/proc/sys/fs/inotify/max_queued_events"
        let original = try String(contentsOfFile: limitPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let harness = try Harness()
        defer {
            try? original.write(toFile: limitPath, atomically: false, encoding: .utf8)
            harness.stop()
        }
        try harness.startStub()
        try "16".write(toFile: limitPath, atomically: false, encoding: .utf8)
        // The limit is read when the inotify instance is created, at the daemon's start.
        try harness.startDaemon()
        try original.write(toFile: limitPath, atomically: false, encoding: .utf8)
        // Staged beside the spool and renamed in one burst: far faster than the watcher reads.
        let count = 400
        let staging = harness.root + "/staging"
        try Syscall.mkdir(staging, mode: 0o700)
        for index in 0..<count {
            let bytes = Array(try JSONSerialization.data(withJSONObject: Harness.request("flood \(index)")))
            try DurableFile.write(bytes, to: "\(staging)/flood\(index).json", syncDirectory: false)
        }
        for index in 0..<count {
            try Syscall.rename("\(staging)/flood\(index).json", harness.layout.request("flood\(index)"))
        }
        // A result appears before its request leaves outgoing (the commit order): both are awaited.
        try waitUntil("every flooded request is answered and removed", timeout: 90) {
            harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".json") }.count == count
                && harness.files(in: harness.layout.outgoing).isEmpty
        }
        #expect(harness.log.contains("inotify queue overflowed; rescanning outgoing"))
        #expect(try harness.stubArrivals().count == count, "each request was sent once")
    }

    @Test(.enabled(if: Harness.isRoot, "mounting a small tmpfs needs root"))
    func aFullDiskPausesIntakeAndLosesNothing() throws {
        let harness = try Harness(tmpfsBytes: 4 << 20)
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["min_free_bytes": 1 << 20, "retry_max_seconds": 0.5])
        // Fill the disk to below the floor: intake pauses.
        let filler = harness.layout.root + "/filler"
        try fill(filler, leaving: 512 << 10, on: harness.layout.root)
        try harness.drop("waits", Harness.request("waits for space"))
        try waitUntil("intake pauses", timeout: 10) { harness.log.contains("intake paused") }
        #expect(exists(harness.layout.request("waits")))
        #expect(!exists(harness.layout.result("waits")))
        // The pause is told outside the log too: before, status and queue said queued, no reason.
        try waitUntil("status tells the pause", timeout: 10) {
            try harness.cli(["status", "--spool", harness.layout.root]).stdout.contains("intake paused: the spool's filesystem has")
        }
        let queue = try harness.cli(["queue", "--spool", harness.layout.root]).stdout
        #expect(queue.contains("waits  queued") && queue.contains("intake paused (a file not read yet waits)"), "\(queue)")
        try Syscall.unlink(filler)
        try waitUntil("intake resumes and the request is answered", timeout: 20) { exists(harness.layout.result("waits")) }
        #expect(harness.log.contains("intake resumed"))

        // Room above the floor but not for the answer: the write fails with ENOSPC, the
        // request stays and is tried again, and the result is never truncated.
        harness.stopDaemon()
        try harness.startDaemon(config: ["min_free_bytes": 64 << 10, "retry_max_seconds": 0.5])
        try fill(filler, leaving: 600 << 10, on: harness.layout.root)
        let prompt = "an answer bigger than the free space"
        try harness.drop("big", Harness.request(prompt, stub: ["tokens": 120_000]))
        try waitUntil("a write hits the full disk", timeout: 20) {
            ((try? harness.record("big"))?["attempts"] as? [[String: Any]])?.contains { $0["outcome"] as? String == "disk" } == true
        }
        #expect(exists(harness.layout.request("big")))
        #expect(!exists(harness.layout.result("big")))
        try Syscall.unlink(filler)
        try waitUntil("the request is answered once there is room", timeout: 30) { exists(harness.layout.result("big")) }
        #expect(Harness.content(of: try harness.json(harness.layout.result("big"))) == StubAnswer.content(prompt: prompt, tokens: 120_000))
        #expect(!exists(harness.layout.errorRecord("big")))
    }

    /// A disk with no room at all still creates empty files: the probe that holds starts
    /// after a failed write now writes a block, so nothing is sent again until there is
    /// room. Before, the empty-file probe passed, and each retry was sent, paid for and
    /// failed at its first write, with two log lines each.
    @Test(.enabled(if: Harness.isRoot, "mounting a small tmpfs needs root"))
    func aDiskWithNoRoomAtAllHoldsEveryStartUntilAWriteSucceeds() throws {
        let harness = try Harness(tmpfsBytes: 4 << 20)
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["min_free_bytes": 0, "retry_initial_seconds": 0.2, "retry_max_seconds": 0.2, "max_attempts": 50],
                                arguments: ["--metrics", "127.0.0.1:0"])
        let port = try harness.metricsPort()
        let unwritable = #"llmspool_spool_held{reason="unwritable"}"#
        let prompt = "answered into a full disk"
        try harness.drop("full", Harness.request(prompt, stub: ["faults": [["header_delay_ms": 1_500]]]))
        try waitUntil("the request reached the stub", timeout: 20) { try harness.arrivals(of: prompt).count == 1 }
        let filler = harness.layout.root + "/filler"
        try fill(filler, leaving: 0, on: harness.layout.root)
        try waitUntil("its answer hit the full disk", timeout: 20) { harness.log.contains("cannot be written") || harness.log.contains("No space left") }
        // Every retry would come due within this time: the disk's state decides, not a timer.
        let held = Date()
        try waitUntil("three seconds of a full disk", timeout: 10) { Date().timeIntervalSince(held) > 3 }
        #expect(try harness.arrivals(of: prompt).count == 1, "nothing sent again while the disk has no room")
        #expect(try harness.metric(unwritable, port: port) == 1, "the hold shows in the metrics")
        try Syscall.unlink(filler)
        try waitUntil("answered once there is room", timeout: 30) { exists(harness.layout.result("full")) }
        try waitUntil("the hold leaves the metrics", timeout: 10) { try harness.metric(unwritable, port: port) == 0 }
        #expect(try harness.arrivals(of: prompt).count == 2)
        #expect(harness.log.components(separatedBy: "the spool can be written again").count - 1 == 1, "one trouble, one recovery")
    }

    /// Writes a file that leaves `bytes` free on the filesystem of `directory`.
    func fill(_ path: String, leaving bytes: UInt64, on directory: String) throws {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { throw HarnessError("statvfs failed") }
        let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
        guard free > bytes else { return }
        let fd = try Syscall.open(path, O_WRONLY | O_CREAT | O_TRUNC)
        defer { Syscall.close(fd) }
        let chunk = [UInt8](repeating: 0x2E, count: 64 << 10)
        var remaining = Int(free - bytes)
        while remaining > 0 {
            let count = min(remaining, chunk.count)
            try chunk.withUnsafeBytes { try Syscall.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            remaining -= count
        }
    }

    @Test func sighupReloadsTheConfigurationWithoutDroppingTransfers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // Start against a dead endpoint, with retries far apart.
        try harness.startDaemon(config: ["base_url": "http://127.0.0.1:9/v1", "retry_initial_seconds": 2, "max_attempts": 5])
        try harness.drop("reloaded", Harness.request("after the reload"))
        try harness.drop("streaming", Harness.request("streams across the reload", stream: true, stub: ["tokens": 20, "token_delay_ms": 100]))
        try waitUntil("the first attempts failed", timeout: 20) {
            ((try? harness.record("reloaded"))?["attempts"] as? [Any])?.count == 1
        }
        try harness.writeConfig(["base_url": harness.stubURL])
        harness.signalDaemon(SIGHUP)
        try waitUntil("the configuration is reloaded", timeout: 10) { harness.log.contains("configuration reloaded") }
        try waitUntil("both requests are answered by the new endpoint", timeout: 30) {
            exists(harness.layout.result("reloaded")) && exists(harness.layout.result("streaming"))
        }
        #expect(harness.daemonIsRunning)
        #expect(Harness.content(of: try harness.json(harness.layout.result("streaming"))) == StubAnswer.content(prompt: "streams across the reload", tokens: 20))
    }

    /// The state a crash between the commit and the clean-up leaves: the record says the
    /// task ended. A restart completes the clean-up and never sends the request again.
    @Test func aRestartRollsAnInterruptedOutcomeForward() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let layout = harness.layout
        // Crashed after publishing the result, before removing the request.
        try harness.drop("was-done", Harness.request("already answered"))
        try DurableFile.write(Array(#"{"object":"chat.completion","choices":[]}"#.utf8), to: layout.result("was-done"))
        let done = TaskRecord(id: "was-done", status: .done, request: FileIdentity(try Syscall.lstat(layout.request("was-done"))),
                              history: TaskHistory(firstSeen: Date()), resultInode: UInt64(try Syscall.lstat(layout.result("was-done")).st_ino))
        try done.write(layout, durable: true)
        // Crashed after committing the failure, before writing its record or moving the request.
        try harness.drop("was-failed", Harness.request("already refused"))
        let failed = TaskRecord(id: "was-failed", status: .failed, request: FileIdentity(try Syscall.lstat(layout.request("was-failed"))),
                                history: TaskHistory(firstSeen: Date()), errorRecord: Array(#"{"kind":"http","http_status":400}"#.utf8))
        try failed.write(layout, durable: true)
        // Committed as done, but the result never got its name: run again.
        try harness.drop("not-published", Harness.request("publish me"))
        try TaskRecord(id: "not-published", status: .done, request: FileIdentity(try Syscall.lstat(layout.request("not-published"))),
                       history: TaskHistory(firstSeen: Date()), resultInode: 1).write(layout, durable: true)
        // A record of an earlier request of the same name: ignored.
        try TaskRecord(id: "renewed", status: .failed, request: FileIdentity(device: 0, inode: 1, size: 1, modifiedNanoseconds: 1),
                       history: TaskHistory(firstSeen: Date())).write(layout, durable: true)
        try harness.drop("renewed", Harness.request("a new request under an old name"))

        try harness.startDaemon()
        try waitUntil("outgoing is empty", timeout: 20) { harness.files(in: layout.outgoing).isEmpty }
        try waitUntil("every outcome is on disk", timeout: 20) {
            exists(layout.failedRequest("was-failed")) && exists(layout.result("not-published")) && exists(layout.result("renewed"))
        }
        let prompts = try harness.stubArrivals().map(\.prompt)
        #expect(!prompts.contains("already answered"), "a finished task is never sent again")
        #expect(!prompts.contains("already refused"))
        #expect(prompts.filter { $0 == "publish me" }.count == 1)
        #expect(prompts.filter { $0 == "a new request under an old name" }.count == 1)
        #expect(try harness.json(layout.result("was-done"))["choices"] as? [Any] != nil, "the published result is kept as it was")
        #expect(try harness.json(layout.errorRecord("was-failed"))["http_status"] as? Int == 400)
        #expect(harness.log.contains("done (completed after a restart) id=was-done"))
    }
}
