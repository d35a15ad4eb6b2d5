import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Journals and claims that lie: a journal copied from another batch, a journal whose input
/// was replaced by other lines of the same size and time, a batch claim with absurd numbers.
/// None may make the daemon resume the wrong lines, skip lines, or stop.
@Suite(.serialized) struct BatchJournalAttackTests {
    static func lines(_ prefix: String, _ count: Int) -> [String] {
        (0..<count).map { BatchTests.line("\(prefix)-\($0)", stub: ["latency_ms": 80]) }
    }

    static func setTime(_ path: String, like other: String) throws {
        let info = try Syscall.lstat(other)
        var times = [info.st_atim, info.st_mtim]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw HarnessError("utimensat \(path): errno \(errno)") }
    }

    static func copy(_ from: String, _ to: String) throws {
        try DurableFile.write(Array(try Data(contentsOf: URL(fileURLWithPath: from))), to: to)
    }

    /// Each output line the answer to its own prompt, once.
    static func expectAnswers(_ harness: Harness, _ name: String, prefix: String, count: Int) throws {
        let output = try BatchTests.outputLines(harness.layout.batchOutput(name))
        let found = BatchTests.byID(output)
        #expect(output.count == count && found.count == count, "\(name): \(output.count) lines, \(found.count) ids")
        for index in 0..<count {
            let body = (found["\(prefix)-\(index)"]?["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:]
            #expect(Harness.content(of: body)?.hasPrefix("Echo: prompt of \(prefix)-\(index)") == true, "\(name) \(prefix)-\(index): \(body)")
        }
    }

    /// A folder at the name of a batch's journal before it starts: no start can be made. It is
    /// tried again after a growing pause, its failures logged 1st, 2nd, 4th..., and `status`
    /// lists the batch with the reason; once the folder goes the batch runs, each line once.
    /// Before, two lines were logged every 2 s for good and the batch was listed nowhere.
    @Test func aBatchWhoseJournalNameIsAFolderWaitsAndSaysWhy() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let journal = harness.layout.batchJournal("blocked")
        try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
        try BatchTests.dropBatch(harness, "blocked", Self.lines("j", 3))
        var shown: [String: Any] = [:]
        try waitUntil("status says why the batch waits, after a few tries", timeout: 60) {
            shown = try BatchTests.reported(harness, "blocked")
            return (shown["start_failures"] as? Int ?? 0) >= 4
        }
        #expect((shown["start_problem"] as? String)?.contains("\(journal): Is a directory") == true, "\(shown)")
        #expect(shown["total"] as? Int == 3)
        let text = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(text.contains("blocked: 0/3 done (0 failed), not started; it cannot be started ("), "\(text)")
        let logged = harness.log.components(separatedBy: "error: cannot start the batch").count - 1
        let failures = shown["start_failures"] as? Int ?? 0
        #expect(logged >= 1 && logged < failures, "the 1st, 2nd, 4th... failure logged, not each: \(logged) lines for \(failures) failures")
        #expect(harness.log.components(separatedBy: "warning: cannot read the batch's journal").count - 1 == 1, "said once")
        // A start that failed leaves no empty output behind (before, one stayed in incoming,
        // for good once the input was removed), and `show` says the batch waits.
        #expect(!Syscall.isPresent(harness.layout.batchPartial("blocked")))
        let show = JSONObject.parse(Array(try harness.cli(["show", "blocked", "--spool", harness.layout.root]).stdout.utf8)) ?? [:]
        #expect(show["state"] as? String == "waiting" && (show["problem"] as? String)?.contains("Is a directory") == true, "\(show)")
        try FileManager.default.removeItem(atPath: journal)
        _ = try BatchTests.waitForSummary(harness, "blocked", timeout: 30)
        try Self.expectAnswers(harness, "blocked", prefix: "j", count: 3)
        #expect(try harness.stubArrivals().count == 3, "each line sent once")
        #expect(harness.log.contains("the batch is started after failed tries"))
    }

    @Test func aJournalCopiedFromAnotherBatchOrForReplacedLinesIsNotResumed() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 8])
        let count = 300
        try BatchTests.dropBatch(harness, "first", Self.lines("a", count))
        try waitUntil("the output grows", timeout: 60) {
            (((try? FileManager.default.attributesOfItem(atPath: harness.layout.batchPartial("first")))?[.size] as? Int) ?? 0) > 20_000
        }
        harness.killDaemon()
        let committed = try SharedBatchTakeoverTests.committed(harness.layout.batchJournal("first"))
        #expect(!committed.isEmpty && committed.count < count, "killed mid-batch: \(committed.count)")
        // A second batch with the first one's journal and output beside it (a copy, or a
        // restore from a backup of another batch).
        try Self.copy(harness.layout.batchJournal("first"), harness.layout.batchJournal("second"))
        try Self.copy(harness.layout.batchPartial("first"), harness.layout.batchPartial("second"))
        try BatchTests.dropBatch(harness, "second", Self.lines("b", count))
        // The first batch's input replaced by other lines of the same size, given its old
        // modification time: on one mount only the inode, birth time and fingerprint differ.
        let original = harness.layout.batchRequest("first")
        let aside = harness.root + "/first-original.jsonl"
        try Self.copy(original, aside)
        try Self.setTime(aside, like: original)
        try BatchTests.dropBatch(harness, "first", Self.lines("z", count))
        try Self.setTime(original, like: aside)
        #expect(try Syscall.lstat(original).st_size == Syscall.lstat(aside).st_size, "the same size")
        let before = try harness.stubArrivals().count
        try harness.startDaemon(config: ["concurrency": 8])
        // The first batch's own journal and list: it ends cancelled before the new lines
        // run (its summary is then replaced by theirs). The copied journal has no list
        // that names it: it is not published as the second batch's.
        for name in ["first", "second"] {
            try waitUntil("\(name)'s new lines end", timeout: 120) {
                ((try? harness.json(harness.layout.batchSummary(name)))?["status"] as? String) == "completed"
            }
        }
        let log = harness.log
        #expect(!log.contains("batch resumed"), "neither journal was the file's: \(log.suffix(2000))")
        #expect(log.contains("the batch's input was replaced while no daemon ran it; the old batch ends first"), "\(log.suffix(2000))")
        #expect(log.contains("a batch journal not vouched for by its list of custom_ids is not ended as the old batch"), "\(log.suffix(2000))")
        #expect(log.split(separator: "\n").filter { $0.contains("batch cancelled") }.allSatisfy { $0.contains("first") },
                "only the first batch's old lines end cancelled")
        try Self.expectAnswers(harness, "first", prefix: "z", count: count)
        try Self.expectAnswers(harness, "second", prefix: "b", count: count)
        let after = try harness.stubArrivals().dropFirst(before).map(\.prompt)
        #expect(Set(after).count == 2 * count, "every line of both sent after the restart: \(Set(after).count)")
        #expect(harness.files(in: harness.layout.batches).filter { $0.hasSuffix(".journal") }.isEmpty)
    }

    /// A batch's claim file written by hand (or torn by a disk) with numbers no daemon
    /// writes: an expiry far in the future, negative, not a number, a huge owner. The
    /// daemon keeps running and runs the batch once the claim is past any honest lease.
    @Test(arguments: [#"{"owner":"x:1:1","expires_at":1e308,"host":"x"}"#, #"{"owner":"x:1:1","expires_at":-1e308}"#,
                      #"{"owner":"x:1:1","expires_at":"soon"}"#, #"{"owner":"\#(String(repeating: "o", count: 5000))","expires_at":9007199254740993}"#,
                      #"{"expires_at":1e400}"#, "{garbage"])
    func aBatchClaimWithAbsurdNumbersDelaysTheBatchAtMostALeaseTime(claim: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.layout.create()
        try FileManager.default.createDirectory(atPath: harness.layout.leases, withIntermediateDirectories: true)
        let lease = harness.layout.lease("absurd.jsonl")
        try DurableFile.write(Array(claim.utf8), to: lease)
        let daemon = try harness.startExtraDaemon("d1", config: ["watch_mode": "poll", "poll_interval_seconds": 0.2, "leases": true,
                                                                "lease_seconds": 2, "host_id": "d1"],
                                                   environment: [SpoolDaemon.leaseFilesVariable: "lease-files"])
        let count = 20
        let started = Date()
        try BatchTests.dropBatch(harness, "absurd", Self.lines("c", count))
        let summary = try BatchTests.waitForSummary(harness, "absurd", timeout: 60)
        let waited = Date().timeIntervalSince(started)
        print("claim \(claim.prefix(60)): the batch ended \(String(format: "%.1f", waited)) s after it was dropped")
        #expect(summary["status"] as? String == "completed")
        #expect(daemon.isRunning, "the daemon keeps running")
        try Self.expectAnswers(harness, "absurd", prefix: "c", count: count)
    }

    /// `cancel` of a batch that could not start says it leaves no output; before, it said
    /// its lines would end `batch_cancelled` in an output that never came.
    @Test func cancellingABatchThatNeverStartedSaysItLeavesNoOutput() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try FileManager.default.createDirectory(atPath: harness.layout.batchJournal("never"), withIntermediateDirectories: true)
        try BatchTests.dropBatch(harness, "never", Self.lines("n", 3))
        try waitUntil("the start fails", timeout: 60) { (try BatchTests.reported(harness, "never")["start_failures"] as? Int ?? 0) >= 1 }
        let cancel = try harness.cli(["cancel", "never", "--spool", harness.layout.root])
        #expect(cancel.status == 0)
        #expect(cancel.stdout == "cancelled batch never: it had not started when cancelled, and leaves no output\n", "\(cancel.stdout)")
        try waitUntil("status lists it no more", timeout: 30) { try BatchTests.reported(harness, "never").isEmpty }
        #expect(harness.files(in: harness.layout.incoming).isEmpty, "nothing in incoming")
        #expect(try harness.stubArrivals().isEmpty)
    }
}

