import Foundation
import LLMSpoolCore
import Testing

/// The people's side of batches: `submit FILE.jsonl --wait` and its exit status, `show`,
/// `status` while one runs, and hooks once per batch.
@Suite(.serialized) struct BatchCommandTests {
    func writeBatch(_ harness: Harness, _ file: String, _ lines: [String]) throws -> String {
        let path = harness.root + "/" + file
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func submitWaitsAndItsExitStatusSaysHowTheBatchEnded() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let log = harness.root + "/hooks.log"
        let hook = "echo \"$LLMSPOOL_BATCH $LLMSPOOL_ID $LLMSPOOL_STATUS $LLMSPOOL_BATCH_STATUS $LLMSPOOL_BATCH_TOTAL $LLMSPOOL_BATCH_SUCCEEDED $LLMSPOOL_BATCH_FAILED\" >> \(log)"
        try harness.startDaemon(config: ["on_complete": hook, "on_failure": hook])
        let good = try writeBatch(harness, "good.jsonl", (0..<20).map { BatchTests.line("g-\($0)") })
        let ok = try harness.cli(["submit", good, "--wait", "--spool", harness.layout.root])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout == harness.layout.batchOutput("good") + "\n")
        #expect(ok.stderr.contains("batch good completed: 20 of 20 succeeded, 0 failed"), "\(ok.stderr)")

        let mixed = try writeBatch(harness, "mixed.jsonl", (0..<10).map { BatchTests.line("m-\($0)", stub: $0 == 4 ? ["status": 400] : nil) })
        let some = try harness.cli(["submit", mixed, "--wait", "--spool", harness.layout.root])
        #expect(some.status == 2, "some lines failed: \(some.stderr)")
        #expect(some.stdout == harness.layout.batchOutput("mixed") + "\n")

        let bad = try writeBatch(harness, "bad.jsonl", [BatchTests.line("x"), "not json"])
        let refused = try harness.cli(["submit", bad, "--wait", "--spool", harness.layout.root])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("batch bad refused"), "\(refused.stderr)")
        #expect(refused.stderr.contains("line 2, column 1"), "\(refused.stderr)")

        let shown = try harness.cli(["show", "mixed", "--spool", harness.layout.root])
        #expect(shown.status == 0)
        let details = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        #expect(details["state"] as? String == "ended")
        let counts = (details["summary"] as? [String: Any])?["request_counts"] as? [String: Any]
        #expect(counts?["failed"] as? Int == 1 && counts?["completed"] as? Int == 9)

        try waitUntil("three hooks ran", timeout: 20) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count >= 3
        }
        #expect(harness.stopDaemon() == 0)
        let lines = Set(try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init))
        #expect(lines == ["1 good done completed 20 20 0", "1 mixed failed completed 10 9 1", "1 bad failed failed 0 0 0"],
                "one hook per batch, none per line: \(lines)")
    }

    @Test func statusListsARunningBatch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 2])
        try BatchTests.dropBatch(harness, "slow", (0..<200).map { BatchTests.line("s-\($0)", stub: ["latency_ms": 100]) })
        var shown = ""
        defer { if !shown.contains("slow:") { Issue.record("status showed: \(shown) \((try? String(contentsOfFile: LiveStatus.path(harness.layout), encoding: .utf8)) ?? "")") } }
        try waitUntil("status lists the batch with some lines done", timeout: 30) {
            shown = try harness.cli(["status", "--spool", harness.layout.root]).stdout
            return shown.range(of: #"slow: [1-9]\d*/200 done \(0 failed\), [12] in flight, [0-9.]+ lines/s, ETA \d+ s"#,
                               options: .regularExpression) != nil
        }
        #expect(!shown.contains(".slow.jsonl."), "lines are not listed one by one: \(shown)")
        let json = try harness.cli(["status", "--json", "--spool", harness.layout.root])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let batch = try #require((object["batches"] as? [[String: Any]])?.first)
        #expect(batch["name"] as? String == "slow")
        #expect(batch["total"] as? Int == 200)
        let show = try harness.cli(["show", "slow", "--spool", harness.layout.root])
        #expect(show.stdout.contains("\"state\" : \"running\""), "\(show.stdout)")
    }

    /// A batch dropped while no daemon runs: `show` said `running` for a batch nothing had
    /// begun (where `status` says `not begun`); now `queued`, and `running` once a daemon runs it.
    @Test func aBatchNoDaemonHasBegunIsShownQueued() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try BatchTests.dropBatch(harness, "later", (0..<40).map { BatchTests.line("l-\($0)", stub: ["latency_ms": 100]) })
        let before = JSONObject.parse(Array(try harness.cli(["show", "later", "--spool", harness.layout.root]).stdout.utf8)) ?? [:]
        #expect(before["state"] as? String == "queued", "\(before)")
        #expect(before["input"] as? String == harness.layout.batchRequest("later"))
        #expect(before["progress"] == nil, "nothing counted yet: \(before)")
        #expect(try harness.cli(["status", "--spool", harness.layout.root]).stdout.contains("later: not begun"))
        try harness.startDaemon(config: ["concurrency": 2])
        try waitUntil("the batch is shown running", timeout: 60) {
            let shown = JSONObject.parse(Array(try harness.cli(["show", "later", "--spool", harness.layout.root]).stdout.utf8)) ?? [:]
            return shown["state"] as? String == "running"
        }
        _ = try BatchTests.waitForSummary(harness, "later", timeout: 60)
    }

    /// A batch whose input was removed while no daemon ran: its journal is all that is left
    /// until the next daemon ends it. `show` said `unknown` and `status` listed it nowhere;
    /// now both name it, and the next start ends it cancelled.
    @Test func aBatchWhoseInputLeftWhileNoDaemonRanIsShownUntilItsEnd() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 1])
        try BatchTests.dropBatch(harness, "left", (0..<50).map { BatchTests.line("l-\($0)", stub: ["latency_ms": 100]) })
        try waitUntil("some lines are committed", timeout: 30) {
            ((try? BatchTests.reported(harness, "left"))?["done"] as? Int ?? 0) >= 2
        }
        harness.killDaemon()
        try Syscall.unlink(harness.layout.batchRequest("left"))
        let show = try harness.cli(["show", "left", "--spool", harness.layout.root])
        let shown = JSONObject.parse(Array(show.stdout.utf8)) ?? [:]
        #expect(shown["state"] as? String == "ending", "\(show.stdout)")
        #expect(shown["input"] == nil, "\(show.stdout)")
        let status = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(status.contains("batches whose input left, their end not published yet (a daemon ends them once it runs and can write):\n  left\n"), "\(status)")
        let json = try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout
        let listed = (JSONObject.parse(Array(json.utf8))?["batches"] as? [[String: Any]]) ?? []
        #expect(listed.contains { $0["name"] as? String == "left" && $0["input_gone"] as? Bool == true }, "\(json)")
        try harness.startDaemon(config: ["concurrency": 1])
        let summary = try BatchTests.waitForSummary(harness, "left", timeout: 30)
        #expect(summary["status"] as? String == "cancelled")
        let ended = JSONObject.parse(Array(try harness.cli(["show", "left", "--spool", harness.layout.root]).stdout.utf8)) ?? [:]
        #expect(ended["state"] as? String == "ended", "\(ended)")
    }

    /// A batch whose every line has ended, its end held (a folder at its summary's name):
    /// `cancel` has nothing to cancel and says so, from the journal, with or without a
    /// daemon running. Before, it removed the input and printed "cancelled".
    @Test func cancelRefusesABatchWhoseEveryLineEndedWithOrWithoutADaemon() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 2])
        try Syscall.mkdir(harness.layout.batchSummary("done"), mode: 0o700)
        try BatchTests.dropBatch(harness, "done", (0..<3).map { BatchTests.line("d-\($0)") })
        try waitUntil("the end is held", timeout: 60) {
            (try BatchTests.reported(harness, "done")["publish_failures"] as? Int ?? 0) >= 1
        }
        let live = try harness.cli(["cancel", "done", "--spool", harness.layout.root])
        #expect(live.status != 0 && live.stderr.contains("has ended; nothing is left to cancel (its end is published once it can be: "),
                "\(live.stderr)")
        harness.killDaemon()
        // With no daemon, `show` tells from the journal that every line ended (it said running).
        let shown = JSONObject.parse(Array(try harness.cli(["show", "done", "--spool", harness.layout.root]).stdout.utf8)) ?? [:]
        #expect(shown["state"] as? String == "ending", "\(shown)")
        let none = try harness.cli(["cancel", "done.jsonl", "--spool", harness.layout.root])
        #expect(none.status != 0 && none.stderr.contains("has ended; nothing is left to cancel (its end is published by the daemon)"),
                "\(none.stderr)")
        #expect(Syscall.isPresent(harness.layout.batchRequest("done")), "the input stays")
    }

    /// With no daemon, `status` names only the journals a daemon would end: one whose
    /// header reads and whose summary is not out. A file of garbage, a folder, or the
    /// journal of a batch whose summary is published (a crash before the journal went) is
    /// no batch waiting for its end; nor is `show z.batch` a batch (`z.batch.jsonl` is a
    /// name left unusable).
    @Test func withoutADaemonStatusNamesOnlyJournalsADaemonWouldEnd() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let input = FileIdentity(device: 1, inode: 2, size: 10, modifiedNanoseconds: 3)
        let header = BatchJournal.encode(BatchJournal.Header(kind: .openai, lines: 1, createdAt: 1, input: input, endpoint: "/v1/chat/completions"))
        try FileManager.default.createDirectory(atPath: harness.layout.batches, withIntermediateDirectories: true)
        for name in ["owed", "published"] { try Data(header).write(to: URL(fileURLWithPath: harness.layout.batchJournal(name))) }
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: harness.layout.batchSummary("published")))
        try Data("garbage\n".utf8).write(to: URL(fileURLWithPath: harness.layout.batchJournal("junk")))
        try FileManager.default.createDirectory(atPath: harness.layout.batchJournal("folder"), withIntermediateDirectories: true)
        let status = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(status.hasSuffix("(a daemon ends them once it runs and can write):\n  owed\n"), "\(status)")
        let folder = try harness.cli(["show", "folder", "--spool", harness.layout.root])
        #expect(folder.status == 1 && !folder.stdout.contains("running"), "a folder at a journal's name is no batch: \(folder.stdout)")
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: harness.layout.outgoing + "/z.batch.jsonl"))
        let reserved = try harness.cli(["show", "z.batch", "--spool", harness.layout.root])
        #expect(!reserved.stdout.contains("\"running\""), "\(reserved.stdout)")
    }
}

