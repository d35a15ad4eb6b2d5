import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolSystem
import Testing

/// The spool's names must lead into the spool the daemon started with: a root swapped or
/// gone, or a folder made a symbolic link, is neither followed nor made again, and no
/// outcome is written through it.
@Suite(.serialized) struct SpoolIntegrityTests {
    /// `folder` moved aside to `<folder>.real` and a link to `target` put under its name.
    func swapForLink(_ folder: String, to target: String) throws {
        try #require(rename(folder, folder + ".real") == 0)
        try #require(symlink(target, folder) == 0)
    }

    /// The link removed and the folder moved back under its name.
    func putBack(_ folder: String) throws {
        try #require(unlink(folder) == 0)
        try #require(rename(folder + ".real", folder) == 0)
    }

    @Test func aSpoolConfiguredThroughALinkIsServed() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let link = harness.root + "/spool-link"
        #expect(symlink(harness.layout.root, link) == 0)
        try harness.startDaemon(config: ["spool": link])
        try harness.drop("linked", Harness.request("through a configured link"))
        try waitUntil("the request is answered", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("linked")) }
        #expect(try harness.arrivals(of: "through a configured link").count == 1)
    }

    @Test func anIncomingSwappedForALinkMidStreamWritesNothingOutsideAndAnswersOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 0.5])
        let outside = harness.root + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        let incoming = harness.layout.incoming
        try harness.drop("swapped", Harness.request("streamed while incoming is swapped", stream: true, stub: ["tokens": 30, "token_delay_ms": 50]))
        try waitUntil("the answer streams", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.partial("swapped")) }
        try swapForLink(incoming, to: outside)
        try waitUntil("the answer is dropped unwritten", timeout: 20) { harness.log.contains("an answer is not written: the spool's folders lead outside it") }
        #expect(harness.files(in: outside).isEmpty, "written outside the spool: \(harness.files(in: outside))")
        #expect(harness.log.contains("spool/incoming is a symbolic link"))
        try putBack(incoming)
        try waitUntil("the request is answered once the folder is back", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("swapped"))
        }
        #expect(harness.files(in: outside).isEmpty)
        // Sent again: the first answer had nowhere to go. One outcome, two calls.
        #expect(try harness.arrivals(of: "streamed while incoming is swapped").count == 2)
        // The result is published before the request leaves outgoing: a moment apart.
        try waitUntil("the request leaves outgoing", timeout: 10) { !FileManager.default.fileExists(atPath: harness.layout.request("swapped")) }
    }

    @Test func aHeldSpoolShowsInTheMetricsAndStatusUntilItIsBack() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 1], arguments: ["--metrics", "127.0.0.1:0"])
        let port = try harness.metricsPort()
        let elsewhere = #"llmspool_spool_held{reason="elsewhere"}"#
        let unwritable = #"llmspool_spool_held{reason="unwritable"}"#
        #expect(try harness.metric(elsewhere, port: port) == 0)
        // In flight across the swap: its answer is dropped unwritten, which owes a probe
        // write before the next start; that is not a disk that cannot be written.
        try harness.drop("across", Harness.request("answered across the hold", stub: ["latency_ms": 1500]))
        try waitUntil("the request reaches the endpoint", timeout: 20) { try harness.arrivals(of: "answered across the hold").count == 1 }
        let outside = harness.root + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        try swapForLink(harness.layout.incoming, to: outside)
        try waitUntil("the hold shows", timeout: 10) { try harness.metric(elsewhere, port: port) == 1 }
        try waitUntil("the answer is dropped unwritten", timeout: 20) { harness.log.contains("an answer is not written: the spool's folders lead outside it") }
        usleep(1_500_000)  // a status turn after the drop
        #expect(try harness.metric(unwritable, port: port) == 0, "held elsewhere, not unwritable")
        // `status` tells it too: the daemon writes no status file through such names.
        let status = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(status.contains("spool held, nothing is sent: the spool's folder \(harness.layout.incoming) is a symbolic link"), "\(status)")
        let json = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
        #expect(json.contains("\"spool_problem\""), "\(json)")
        // So do `queue` and `show` for the request held meanwhile (before: "no daemon running"
        // once the status file was 5 s old).
        try waitUntil("the request held across is waiting", timeout: 20) {
            try harness.cli(["queue", "--spool", harness.layout.root]).stdout.contains("spool held, nothing is sent: the spool's folder")
        }
        let shown = try harness.cli(["show", "across", "--spool", harness.layout.root]).stdout
        let details = try #require(JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: Any], "\(shown)")
        #expect((details["waiting_for"] as? String)?.hasPrefix("spool held, nothing is sent: the spool's folder") == true, "\(details)")
        try putBack(harness.layout.incoming)
        try waitUntil("the hold ends", timeout: 10) { try harness.metric(elsewhere, port: port) == 0 }
        #expect(try !harness.cli(["status", "--spool", harness.layout.root]).stdout.contains("spool held"))
        try harness.drop("after", Harness.request("after the hold"))
        try waitUntil("requests are answered after the hold", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("after")) && FileManager.default.fileExists(atPath: harness.layout.result("across"))
        }
        #expect(try harness.metric(unwritable, port: port) == 0)
    }

    /// `failed` moved aside and a file put in its place: every start is held.
    static func makeFailedAFile(_ harness: Harness) throws {
        let failed = harness.layout.failed
        try #require(rename(failed, failed + ".real") == 0)
        try DurableFile.write(Array("not a folder".utf8), to: failed, syncDirectory: false)
    }

    static func putFailedBack(_ harness: Harness) throws {
        try Syscall.unlink(harness.layout.failed)
        try #require(rename(harness.layout.failed + ".real", harness.layout.failed) == 0)
    }

    /// A start held by the look before it (`failed` made a file) sent nothing: it is not an
    /// attempt. Before, each held start was logged and kept as a failed attempt of kind
    /// `disk` ("writing the answer failed"), and the record listed them all once written.
    @Test func aStartHeldByAFolderThatIsAFileIsNoAttempt() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_initial_seconds": 0.2, "retry_max_seconds": 0.5])
        try Self.makeFailedAFile(harness)
        try harness.drop("held", Harness.request("held by a file in failed's place"))
        try waitUntil("the start is held", timeout: 20) { harness.log.contains("spool/failed is not a folder") }
        // Several retry periods: each would have been a start, and an attempt.
        let held = Date()
        try waitUntil("two seconds of the hold", timeout: 10) { Date().timeIntervalSince(held) > 2 }
        #expect(try harness.arrivals(of: "held by a file in failed's place").isEmpty)
        #expect(!harness.log.contains("attempt failed; will retry id=held"), "\(harness.log)")
        try Self.putFailedBack(harness)
        try waitUntil("answered once the folder is back", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("held")) }
        let attempts = try #require(try harness.record("held")["attempts"] as? [[String: Any]])
        #expect(attempts.count == 1, "\(attempts)")
        #expect(try harness.arrivals(of: "held by a file in failed's place").count == 1)
    }

    /// A request held while the spool was not its own is sent once the spool is back, not a
    /// `retry_max_seconds` later: the status thread, which looks at the folders each second,
    /// sees the hold end and asks for the held requests at once. (Before, the start held
    /// waited the longest back-off, a minute here.)
    @Test func aRequestHeldWhileTheSpoolWasNotItsOwnGoesOnceItIsBack() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_initial_seconds": 0.2, "retry_max_seconds": 60])
        try Self.makeFailedAFile(harness)
        try harness.drop("back", Harness.request("held until the spool is back"))
        try waitUntil("the start is held", timeout: 20) { harness.log.contains("spool/failed is not a folder") }
        try Self.putFailedBack(harness)
        try waitUntil("answered within seconds of the spool's return, not a minute", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("back"))
        }
        #expect(harness.log.contains("requests held while the spool's folders were not its own are released now"), "\(harness.log)")
        #expect(try harness.arrivals(of: "held until the spool is back").count == 1)
    }

    /// Swapped after the request went out and before its first byte: the `.partial` is
    /// created by name at that byte, and one made outside the spool is taken back at once.
    @Test func anAnswerWhoseFirstByteComesAfterTheSwapLeavesNoFileOutside() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 0.5])
        let outside = harness.root + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        let incoming = harness.layout.incoming
        let prompt = "first byte after the swap"
        try harness.drop("late", Harness.request(prompt, stream: true, stub: ["faults": [["header_delay_ms": 1_500]]]))
        try waitUntil("the request is sent", timeout: 20) { try !harness.arrivals(of: prompt).isEmpty }
        try swapForLink(incoming, to: outside)
        try waitUntil("the answer is dropped unwritten", timeout: 20) { harness.log.contains("is not written: the spool's folders lead outside it") }
        #expect(harness.files(in: outside).isEmpty, "written outside the spool: \(harness.files(in: outside))")
        try putBack(incoming)
        try waitUntil("the request is answered once the folder is back", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.result("late"))
        }
        #expect(harness.files(in: outside).isEmpty)
    }

    /// A running batch's output is not copied through a linked `incoming` (its name looked
    /// lost there): before, the lines after the swap went to a copy outside the spool, and
    /// the batch ended with its summary counting 12 lines and an output of 4.
    @Test func aBatchRunningWhileIncomingIsSwappedEndsWithEveryLine() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 1, "retry_max_seconds": 0.5])
        let outside = harness.root + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        let incoming = harness.layout.incoming
        let lines = (0..<12).map { BatchTests.line("l\($0)", prompt: "line \($0)", stream: true, stub: ["tokens": 6, "token_delay_ms": 50]) }
        try BatchTests.dropBatch(harness, "b1", lines)
        let partial = harness.layout.batchPartial("b1")
        try waitUntil("four lines are committed", timeout: 30) {
            ((try? String(contentsOfFile: partial, encoding: .utf8)) ?? "").split(separator: "\n").count >= 4
        }
        try swapForLink(incoming, to: outside)
        try waitUntil("the spool is held", timeout: 20) { harness.log.contains("spool/incoming is a symbolic link") }
        // Lines that were in flight end meanwhile; give them time to try to commit.
        Thread.sleep(forTimeInterval: 2)
        #expect(harness.files(in: outside).isEmpty, "written outside the spool: \(harness.files(in: outside))")
        try putBack(incoming)
        let summary = try BatchTests.waitForSummary(harness, "b1", timeout: 60)
        let output = try BatchTests.outputLines(harness.layout.batchOutput("b1"))
        #expect(output.count == 12, "every line in the output: \(output.count)")
        #expect(Set(output.compactMap { $0["custom_id"] as? String }) == Set((0..<12).map { "l\($0)" }))
        #expect((summary["request_counts"] as? [String: Any])?["completed"] as? Int == 12, "\(summary)")
        #expect(harness.files(in: outside).isEmpty)
    }

    @Test func aRootThatIsGoneIsNotMadeAgain() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["rescan_interval_seconds": 1])
        let root = harness.layout.root
        #expect(rename(root, root + ".away") == 0)
        try waitUntil("the daemon looked for outgoing", timeout: 20) { harness.log.contains("outgoing is missing and is not made again") }
        #expect(!FileManager.default.fileExists(atPath: root), "the spool was made again on the filesystem under it")
        #expect(harness.log.contains("is gone (removed, or its filesystem unmounted)"))
        // Logged once, not at every rescan.
        Thread.sleep(forTimeInterval: 2.5)
        #expect(harness.log.components(separatedBy: "outgoing is missing and is not made again").count == 2, "\(harness.log)")
        #expect(!harness.log.contains("cannot lock the spool again"))
        #expect(rename(root + ".away", root) == 0)
        try harness.drop("back", Harness.request("after the root came back"))
        try waitUntil("the request is answered", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("back")) }
    }

    /// The status thread skips its writes while the root is gone; it must still tell the
    /// stop that it ended (a first version waited for ever).
    @Test func aStopWhileTheRootIsGoneEnds() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["rescan_interval_seconds": 1])
        let root = harness.layout.root
        #expect(rename(root, root + ".away") == 0)
        defer { _ = rename(root + ".away", root) }
        try waitUntil("the daemon noticed", timeout: 20) { harness.log.contains("outgoing is missing and is not made again") }
        harness.signalDaemon(SIGTERM)
        try waitUntil("the daemon stops", timeout: 20) { harness.daemon?.isRunning == false }
        #expect(harness.daemon?.terminationStatus == 0)
    }

    @Test func aFolderThatIsALinkIsRefusedAtStart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let outside = harness.root + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        #expect(rmdir(harness.layout.failed) == 0)
        #expect(symlink(outside, harness.layout.failed) == 0)
        try harness.startDaemon(config: ["base_url": "http://127.0.0.1:9/v1"], waitUntilWatching: false)
        try waitUntil("the daemon refused to start", timeout: 20) { harness.daemon?.isRunning == false }
        #expect(harness.daemon?.terminationStatus != 0)
        #expect(harness.log.contains("\(harness.layout.failed) is a symbolic link"), "\(harness.log)")
    }

    @Test(.enabled(if: Harness.isRoot, "mounting a tmpfs needs root"))
    func aFailedFolderOnAnotherFilesystemIsRefusedAtStart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try Harness.run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", harness.layout.failed])
        defer { _ = try? Harness.run("/bin/umount", [harness.layout.failed]) }
        try harness.startDaemon(config: ["base_url": "http://127.0.0.1:9/v1"], waitUntilWatching: false)
        try waitUntil("the daemon refused to start", timeout: 20) { harness.daemon?.isRunning == false }
        #expect(harness.daemon?.terminationStatus != 0)
        #expect(harness.log.contains("\(harness.layout.failed) is on another filesystem than"), "\(harness.log)")
    }

    @Test func cleanRefusesAFolderThatIsALink() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let outside = harness.root + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        let precious = outside + "/precious.json"
        try DurableFile.write(Array(#"{"not": "a result"}"#.utf8), to: precious)
        var old = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, precious, &old, 0) == 0)
        #expect(rmdir(harness.layout.incoming) == 0)
        #expect(symlink(outside, harness.layout.incoming) == 0)
        let clean = try harness.cli(["clean", "--older-than", "1d", "--spool", harness.layout.root])
        #expect(clean.status == 1)
        #expect(clean.stderr.contains("\(harness.layout.incoming) is a symbolic link"), "\(clean.stderr)")
        #expect(FileManager.default.fileExists(atPath: precious))
    }
}
