import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// `rm -rf incoming` while answers arrive: what was received is in files the daemon still
/// holds open, and is published from them. Sending the request again would pay for the
/// same answer twice.
@Suite(.serialized) struct IncomingRemovedTests {
    static func size(_ path: String) -> Int {
        (try? Syscall.lstat(path)).map { Int($0.st_size) } ?? 0
    }

    /// CPU seconds (user and system) the threads of `pid` named `name` have used.
    static func threadCPUSeconds(pid: pid_t, named name: String) throws -> Double {
        var total = 0.0
        for tid in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            let comm = try String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8)
            guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == name else { continue }
            let stat = try String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8)
            // After the command's closing parenthesis: the state (field 3), ..., utime (14), stime (15).
            guard let close = stat.range(of: ")", options: .backwards) else { throw HarnessError("no command in \(stat)") }
            let fields = stat[close.upperBound...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { throw HarnessError("cannot read \(stat)") }
            total += (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        return total
    }

    /// Drops a stream, removes `incoming` once its `.partial` has bytes (and makes it again
    /// if asked), and checks that the request ended once, published, with one call and no
    /// failure. The result's text.
    static func removeIncomingDuringStream(_ harness: Harness, id: String, prompt: String, stub: [String: Any],
                                           folderMadeAgain: Bool = false) throws -> String? {
        try harness.drop(id, Harness.request(prompt, stream: true, stub: stub))
        try waitUntil("the stream is under way", timeout: 30) { size(harness.layout.partial(id)) > 0 }
        #expect(!FileManager.default.fileExists(atPath: harness.layout.result(id)), "removed while the answer arrives")
        try FileManager.default.removeItem(atPath: harness.layout.incoming)
        if folderMadeAgain { try Syscall.mkdir(harness.layout.incoming, mode: 0o700) }
        try waitUntil("the request ends", timeout: 30) { !FileManager.default.fileExists(atPath: harness.layout.request(id)) }
        #expect(try harness.arrivals(of: prompt).count == 1, "sent once")
        #expect(harness.files(in: harness.layout.failed).isEmpty, "no failure written")
        #expect(!harness.log.contains("outcome not written"), "never postponed")
        #expect(harness.log.components(separatedBy: "done id=\(id)").count == 2, "reported done once")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.partial(id)))
        return Harness.content(of: try harness.json(harness.layout.result(id)))
    }

    @Test(arguments: [false, true]) func aStreamWhoseFolderIsRemovedIsPublishedOnceFromWhatArrived(folderMadeAgain: Bool) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 0.2])
        let prompt = "a stream whose incoming is removed, made again: \(folderMadeAgain)"
        let tokens = 40
        let content = try Self.removeIncomingDuringStream(harness, id: "gone", prompt: prompt, stub: ["tokens": tokens, "token_delay_ms": 100],
                                                          folderMadeAgain: folderMadeAgain)
        #expect(content == StubAnswer.content(prompt: prompt, tokens: tokens), "the whole answer, its first part included")
        let events = try String(contentsOfFile: harness.layout.rawStream("gone"), encoding: .utf8)
        #expect(events.components(separatedBy: "data:").count > tokens, "the raw events from the first to the last")
        #expect(harness.log.contains("written again from the file still open"))
    }

    /// The text past 64 KiB goes to the result's temporary, created once the folder is gone:
    /// the folder is made again for it.
    @Test func aLongStreamWhoseFolderIsRemovedBeforeItsTextIsPublishedOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["retry_max_seconds": 0.2])
        let prompt = "a long stream whose incoming is removed before its text"
        let tokens = 12_000
        // Keep-alives for 3 s after the stream's first event, then all the text at once.
        let content = try #require(try Self.removeIncomingDuringStream(harness, id: "long", prompt: prompt,
                                                                       stub: ["tokens": tokens, "faults": [["stall_ms": 3000]]]))
        #expect(content.utf8.count > 64 * 1024, "the text went through the result's temporary")
        #expect(content == StubAnswer.content(prompt: prompt, tokens: tokens))
    }

    @Test func aBatchWhoseOutputIsRemovedKeepsEveryCommittedLineOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 2])
        let count = 40
        try BatchTests.dropBatch(harness, "kept", (0..<count).map { BatchTests.line("k-\($0)", stub: ["latency_ms": 150]) })
        let partial = harness.layout.batchPartial("kept")
        try waitUntil("some lines are committed", timeout: 60) {
            ((try? String(contentsOfFile: partial, encoding: .utf8)) ?? "").split(separator: "\n").count >= 4
        }
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchSummary("kept")), "removed while the batch runs")
        try FileManager.default.removeItem(atPath: harness.layout.incoming)
        let summary = try BatchTests.waitForSummary(harness, "kept", timeout: 60)
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("kept"))
        #expect(output.count == count, "every line once, those committed before the removal included")
        #expect(BatchTests.byID(output).count == count)
        #expect(output.allSatisfy { $0["error"] is NSNull })
        #expect(try harness.stubArrivals().count == count, "each line sent once")
        #expect(harness.log.contains("the batch's output was removed while it ran"))
    }

    /// `state` removed while a batch runs, then a restart: the journal takes its name back
    /// from the file still open, so the restart sends only the lines it had not committed
    /// (before, it found no journal and sent every line again).
    @Test func aBatchWhoseJournalIsRemovedSendsEachLineOnceAcrossARestart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 2])
        let count = 40
        try BatchTests.dropBatch(harness, "journaled", (0..<count).map { BatchTests.line("j-\($0)", stub: ["latency_ms": 150]) })
        let partial = harness.layout.batchPartial("journaled")
        try waitUntil("some lines are committed", timeout: 60) {
            ((try? String(contentsOfFile: partial, encoding: .utf8)) ?? "").split(separator: "\n").count >= 4
        }
        try FileManager.default.removeItem(atPath: harness.layout.state)
        try waitUntil("more lines are committed after the removal", timeout: 60) {
            ((try? String(contentsOfFile: partial, encoding: .utf8)) ?? "").split(separator: "\n").count >= 12
        }
        harness.stopDaemon()
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchSummary("journaled")), "stopped while the batch runs")
        try harness.startDaemon(config: ["concurrency": 2])
        let summary = try BatchTests.waitForSummary(harness, "journaled", timeout: 60)
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("journaled"))
        #expect(output.count == count && BatchTests.byID(output).count == count, "every line once")
        #expect(try harness.stubArrivals().count == count, "each line sent once, across the removal and the restart")
        #expect(harness.log.contains("the batch's journal was removed while it ran"))
    }

    /// On a local spool another file under the output's name is a person's or a tool's
    /// (a save through a temporary renamed over it): the output still open takes the name
    /// back and the batch ends as if nothing happened. (On a shared spool it would be the
    /// output of a daemon that took the batch over: `SharedBatchTakeoverTests`.)
    @Test func aBatchWhoseOutputIsReplacedByAnotherFileOnALocalSpoolTakesItsNameBack() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 2])
        let count = 40
        try BatchTests.dropBatch(harness, "saved", (0..<count).map { BatchTests.line("s-\($0)", stub: ["latency_ms": 150]) })
        let partial = harness.layout.batchPartial("saved")
        try waitUntil("some lines are committed", timeout: 60) {
            ((try? String(contentsOfFile: partial, encoding: .utf8)) ?? "").split(separator: "\n").count >= 4
        }
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchSummary("saved")), "replaced while the batch runs")
        try DurableFile.write(Array("not the batch's\n".utf8), to: partial, syncDirectory: false)
        let summary = try BatchTests.waitForSummary(harness, "saved", timeout: 60)
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("saved"))
        #expect(output.count == count, "every line once, those committed before the save included")
        #expect(BatchTests.byID(output).count == count)
        #expect(try harness.stubArrivals().count == count, "each line sent once")
        #expect(!harness.log.contains("cannot commit the batch's lines"))
    }

    /// A folder made under the output's name while the batch runs (its file renamed away):
    /// no rename replaces a folder, so its lines cannot be committed. They wait in memory,
    /// tried after a growing pause (before: every 200 ms, each try copying the whole output
    /// beside the name and logging an error, for good), `status` says why, and once the
    /// folder is gone the batch ends with every line once, each sent once. On a spool shared
    /// by several daemons (`leases`) as well: the folder was taken for another daemon's
    /// output, and the batch given up here.
    @Test(arguments: [false, true])
    func aBatchWhoseOutputNameIsTakenByAFolderWaitsForItAndSaysWhy(shared: Bool) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: shared ? ["concurrency": 2, "leases": true, "lease_seconds": 60] : ["concurrency": 2])
        let count = 30
        try BatchTests.dropBatch(harness, "blocked", (0..<count).map { BatchTests.line("b-\($0)", stub: ["latency_ms": 150]) })
        let partial = harness.layout.batchPartial("blocked")
        try waitUntil("some lines are committed", timeout: 60) {
            ((try? String(contentsOfFile: partial, encoding: .utf8)) ?? "").split(separator: "\n").count >= 4
        }
        // A commit between the two steps gives the name back from the open file: moved away again.
        var attempt = 0
        while true {
            try Syscall.rename(partial, harness.layout.root + "/moved-away-\(attempt)")
            do {
                try Syscall.mkdir(partial, mode: 0o700)
                break
            } catch let error as SystemError where error.errno == EEXIST && attempt < 10 {
                attempt += 1
            }
        }
        let pid = try #require(harness.daemon?.processIdentifier)
        let (cpuBefore, blockedAt) = (try Self.threadCPUSeconds(pid: pid, named: "batch"), Date())
        var shown: [String: Any] = [:]
        try waitUntil("status says why the lines wait, after a few tries", timeout: 60) {
            shown = try BatchTests.reported(harness, "blocked")
            return (shown["commit_failures"] as? Int ?? 0) >= 5
        }
        // Five failures take 3 s of pauses at least. Before, the batch thread was woken every
        // round while lines waited, and spun at a full core.
        let (cpu, blocked) = (try Self.threadCPUSeconds(pid: pid, named: "batch") - cpuBefore, Date().timeIntervalSince(blockedAt))
        #expect(cpu < blocked / 2, "the batch thread used \(cpu) s of CPU in \(blocked) s blocked")
        // Read before the count it is compared with, which only grows.
        let logged = harness.log.components(separatedBy: "error: cannot commit the batch's lines").count - 1
        let failures = try #require(try BatchTests.reported(harness, "blocked")["commit_failures"] as? Int)
        #expect(logged >= 1 && logged < failures, "the 1st, 2nd, 4th... failure logged, not each: \(logged) lines for \(failures) failures")
        #expect((shown["commit_problem"] as? String)?.contains("\(partial) is a folder") == true, "\(shown)")
        let text = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(text.contains("its lines cannot be written ("), "\(text)")
        #expect(!harness.log.contains("the batch's output was removed while it ran"), "no copy written while the folder is there")
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasPrefix(".") }.isEmpty, "no temporary left beside the name")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchSummary("blocked")))
        try FileManager.default.removeItem(atPath: partial)
        let summary = try BatchTests.waitForSummary(harness, "blocked", timeout: 90)
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("blocked"))
        #expect(output.count == count && BatchTests.byID(output).count == count, "every line once, those committed before the folder included")
        #expect(try harness.stubArrivals().count == count, "each line sent once")
        #expect(harness.log.contains("the batch's lines are committed again"))
    }

    /// A folder at a name the batch's end is published under (its summary's here; its output's
    /// and errors file's take the same path): every line ended, the end is tried again after a
    /// growing pause and `status` lists the batch with the reason. Before, the end waited for
    /// the next start or the sweep of a minute, the batch was listed nowhere, and the summary's
    /// temporary was left beside the folder.
    @Test(arguments: ["summary", "errors"])
    func aBatchWhoseEndIsHeldByAFolderIsPublishedOnceItGoes(_ which: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 2])
        let name = "held-\(which)"
        let blocked = which == "summary" ? harness.layout.batchSummary(name) : harness.layout.batchErrors(name)
        try Syscall.mkdir(blocked, mode: 0o700)
        let count = 6
        // One line fails, so that an errors file is written.
        try BatchTests.dropBatch(harness, name, (0..<count).map { BatchTests.line("h-\($0)", stub: $0 == 2 ? ["status": 400] : nil) })
        var shown: [String: Any] = [:]
        try waitUntil("status says why the end waits, after a few tries", timeout: 60) {
            shown = try BatchTests.reported(harness, name)
            return (shown["publish_failures"] as? Int ?? 0) >= 5
        }
        #expect((shown["publish_problem"] as? String)?.contains("\(blocked): Is a directory") == true, "\(shown)")
        #expect(shown["done"] as? Int == count)
        let text = try harness.cli(["status", "--spool", harness.layout.root]).stdout
        #expect(text.contains("\(name): \(count)/\(count) done (1 failed), ended; its end cannot be published ("), "\(text)")
        let logged = harness.log.components(separatedBy: "error: cannot publish the batch's end; it is tried again").count - 1
        let failures = shown["publish_failures"] as? Int ?? 0
        #expect(logged >= 1 && logged < failures, "the 1st, 2nd, 4th... failure logged, not each: \(logged) lines for \(failures) failures")
        // `show` says the batch is ending and why, naming no `.partial` (the output has its
        // name); before, it said `running` with the `.partial` that was gone.
        let show = try harness.cli(["show", "--spool", harness.layout.root, name])
        let shownBatch = JSONObject.parse(Array(show.stdout.utf8)) ?? [:]
        #expect(shownBatch["state"] as? String == "ending", "\(show.stdout)")
        #expect((shownBatch["problem"] as? String)?.contains("Is a directory") == true, "\(show.stdout)")
        #expect(shownBatch["partial_output"] == nil, "\(show.stdout)")
        // Nothing is left to cancel: `cancel` says so and leaves the input (before, it removed
        // it and printed "cancelled" for a batch whose summary then said completed).
        let cancel = try harness.cli(["cancel", "--spool", harness.layout.root, name])
        #expect(cancel.status != 0, "\(cancel.stdout)")
        #expect(cancel.stderr.contains("every line of batch \(harness.layout.batchRequest(name)) has ended; nothing is left to cancel"),
                "\(cancel.stderr)")
        #expect(Syscall.isPresent(harness.layout.batchRequest(name)))
        try FileManager.default.removeItem(atPath: blocked)
        // The pause after a handful of failures is a few seconds; the next start or the
        // minute's sweep would be far later.
        let summary = try BatchTests.waitForSummary(harness, name, timeout: 30)
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(harness.layout.batchOutput(name))
        #expect(output.count == count && BatchTests.byID(output).count == count, "every line once")
        #expect(try harness.stubArrivals().count == count, "each line sent once")
        #expect(FileManager.default.fileExists(atPath: harness.layout.batchErrors(name)))
        // Removed just after the summary appears (the plan's last steps).
        try waitUntil("the input leaves with the end", timeout: 10) { !Syscall.isPresent(harness.layout.batchRequest(name)) }
        #expect(harness.log.contains("the batch's end is published after failed tries"))
    }

    /// While an end is held (a folder at its summary's name) its journal is removed and its
    /// consumer takes the output without waiting for the summary: the end is still published
    /// from what the daemon knew, the summary written once the folder goes, and no line sent
    /// again. Before, the end was dropped with the journal and the next sweep ran every line
    /// again; and an output taken was read as a consumer that had had its summary already.
    @Test func aHeldEndIsFinishedFromWhatTheDaemonKnewWhateverIsTakenMeanwhile() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 2])
        let summary = harness.layout.batchSummary("taken")
        try Syscall.mkdir(summary, mode: 0o700)
        let count = 5
        try BatchTests.dropBatch(harness, "taken", (0..<count).map { BatchTests.line("t-\($0)") })
        try waitUntil("the end is held", timeout: 60) {
            (try BatchTests.reported(harness, "taken")["publish_failures"] as? Int ?? 0) >= 2
        }
        let taken = harness.root + "/taken-by-consumer.jsonl"
        try Syscall.rename(harness.layout.batchOutput("taken"), taken)
        try Syscall.rename(harness.layout.batchJournal("taken"), harness.root + "/journal-moved-away")
        try FileManager.default.removeItem(atPath: summary)
        let published = try BatchTests.waitForSummary(harness, "taken", timeout: 40)
        #expect(published["status"] as? String == "completed")
        let output = try BatchTests.outputLines(taken)
        #expect(output.count == count && BatchTests.byID(output).count == count, "every line in the output the consumer took")
        // Removed just after the summary appears (the plan's last steps).
        try waitUntil("the input leaves with the end", timeout: 10) { !Syscall.isPresent(harness.layout.batchRequest("taken")) }
        // A sweep (every minute) that found the input without its journal would send them all again.
        #expect(try harness.stubArrivals().count == count, "each line sent once")
        #expect(harness.log.components(separatedBy: "batch accepted id=taken").count - 1 == 1, "the batch is not started again")
    }

    /// While an end is held by a folder at the output's name, the operator removes the
    /// `.partial`, empties it, cuts it, puts a link in its place, or removes it and puts a
    /// file of their own at the output's name (`strangerAtOutput`), or removes it and the
    /// daemon is restarted before the folder goes (`restart`): the answers are gone.
    /// Before, the end was published `completed` naming what was (or was not) at the
    /// output's name, and an emptied or cut `.partial` had every line sent again; now the
    /// summary says `failed`, the output lost (`errors`, no `output_file_id`), `on_failure`
    /// runs with it, and no line is sent again.
    /// `…Shared`: the same with leases (a shared spool, where the end is judged by the
    /// whole path while this daemon holds the batch's claim); before, the end waited for the
    /// folder and an emptied `.partial` had every line sent again (on GlusterFS and sshfs too).
    @Test(arguments: ["removed", "emptied", "cut", "link", "strangerAtOutput", "restart", "removedShared", "emptiedShared"])
    func aHeldEndWhosePartialOutputIsRemovedSaysItsOutputIsLost(_ variant: String) throws {
        let shared = variant.hasSuffix("Shared")
        let how = shared ? String(variant.dropLast("Shared".count)) : variant
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let hooks = harness.root + "/hooks.log"
        let hook = "echo \"$LLMSPOOL_STATUS $LLMSPOOL_BATCH_STATUS ${LLMSPOOL_RESULT:-no-result} $LLMSPOOL_ERROR\" >> \(hooks)"
        var config: [String: Any] = ["concurrency": 2, "on_complete": hook, "on_failure": hook]
        if shared {
            config["leases"] = true
            config["lease_seconds"] = 60
        }
        try harness.startDaemon(config: config)
        let output = harness.layout.batchOutput("lost")
        let partial = harness.layout.batchPartial("lost")
        try Syscall.mkdir(output, mode: 0o700)
        let count = 4
        try BatchTests.dropBatch(harness, "lost", (0..<count).map { BatchTests.line("x-\($0)", stub: $0 == 1 ? ["status": 400] : nil) })
        try waitUntil("the end is held", timeout: 60) {
            (try BatchTests.reported(harness, "lost")["publish_failures"] as? Int ?? 0) >= 2
        }
        // `restart`: removed while no daemon runs; the restarted daemon finds no `.partial`
        // and a folder at the output's name: no output is anywhere, and it says so. (Were
        // the folder gone before it looked, nothing would tell the loss from a consumer that
        // took the output: README.)
        if how == "restart" { harness.killDaemon() }
        switch how {
        case "emptied": try #require(truncate(partial, 0) == 0)
        case "cut": try #require(truncate(partial, try Syscall.lstat(partial).st_size / 2) == 0)
        case "link":
            try Syscall.unlink(partial)
            try FileManager.default.createSymbolicLink(atPath: partial, withDestinationPath: harness.root + "/elsewhere")
        default: try Syscall.unlink(partial)
        }
        if how == "restart" {
            try harness.startDaemon(config: config)
        } else {
            try FileManager.default.removeItem(atPath: output)
        }
        if how == "strangerAtOutput" { try Data("{\"not\":\"the batch's\"}\n".utf8).write(to: URL(fileURLWithPath: output)) }
        let summary = try BatchTests.waitForSummary(harness, "lost", timeout: 40)
        #expect(summary["status"] as? String == "failed", "\(summary)")
        #expect(summary["output_file_id"] is NSNull, "\(summary)")
        #expect(summary["error_file_id"] is NSNull, "no errors file could be read from a lost output: \(summary)")
        let errors = (summary["errors"] as? [String: Any])?["data"] as? [[String: Any]]
        #expect(errors?.first?["code"] as? String == "output_removed", "\(summary)")
        let counts = summary["request_counts"] as? [String: Any]
        #expect(counts?["completed"] as? Int == count - 1 && counts?["failed"] as? Int == 1, "the lines as they ended: \(summary)")
        #expect(!Syscall.isPresent(harness.layout.batchErrors("lost")))
        #expect(Syscall.isPresent(output) == (how == "strangerAtOutput" || how == "restart"),
                "the stranger's file (or the folder) is left as it is, and named nowhere")
        // Removed just after the summary appears (the plan's last steps).
        try waitUntil("the input leaves with the end", timeout: 10) { !Syscall.isPresent(harness.layout.batchRequest("lost")) }
        #expect(try harness.stubArrivals().count == count, "each line sent once")
        // Logged just after the summary appears.
        try waitUntil("the loss is logged", timeout: 10) {
            harness.log.contains("error: the batch's output was removed before it was published; its answers are lost")
        }
        try waitUntil("the hook runs", timeout: 20) { FileManager.default.fileExists(atPath: hooks) }
        #expect(try String(contentsOfFile: hooks, encoding: .utf8) == "failed failed no-result \(harness.layout.batchSummary("lost"))\n",
                "on_failure, with the summary that says why and no result")
        let show = JSONObject.parse(Array(try harness.cli(["show", "lost", "--spool", harness.layout.root]).stdout.utf8)) ?? [:]
        #expect(show["state"] as? String == "ended" && show["output"] == nil, "no output named: \(show)")
    }
}