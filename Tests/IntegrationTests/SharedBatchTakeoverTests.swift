import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// A batch on a spool two daemons share with leases, when its owner is paused or dies and
/// its journal is left to the other: the paused owner that lost its claim writes nothing
/// more, and a journal whose input left while no daemon ran it is ended by a running daemon.
@Suite(.serialized) struct SharedBatchTakeoverTests {
    /// Each daemon posts under a path of its own, so the stub's record says who sent what.
    static func config(_ host: String, _ harness: Harness) -> [String: Any] {
        ["watch_mode": "poll", "poll_interval_seconds": 0.2, "leases": true, "lease_seconds": 3, "host_id": host, "concurrency": 8,
         "base_url": NetworkSpoolTests.url(harness, of: host)]
    }

    static func outputLength(_ harness: Harness, _ name: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: harness.layout.batchPartial(name)))?[.size] as? Int) ?? 0
    }

    /// The entries the journal has committed, by line.
    static func committed(_ path: String) throws -> Set<Int> {
        let journal = try String(contentsOfFile: path, encoding: .utf8)
        return Set(journal.split(separator: "\n").dropFirst().compactMap { record -> Int? in
            let fields = record.split(separator: " ")
            guard fields.count == 5, fields[1].count == 1, "sfce".contains(fields[1]) else { return nil }
            return Int(fields[0])
        })
    }

    /// The descriptors of process `pid` open on the file `path` names now.
    static func descriptors(of pid: Int32, openOn path: String) throws -> [String] {
        var named = stat()
        guard stat(path, &named) == 0 else { return [] }
        let folder = "/proc/\(pid)/fd"
        return try FileManager.default.contentsOfDirectory(atPath: folder).filter { fd in
            var open = stat()
            return stat("\(folder)/\(fd)", &open) == 0 && open.st_dev == named.st_dev && open.st_ino == named.st_ino
        }
    }

    /// Daemons d1 and d2 on the harness's spool, with lease files for claims (as on a
    /// filesystem without locks: a paused daemon's lease expires).
    static func startWithLeaseFiles(_ harness: Harness) throws -> [String: Process] {
        var daemons: [String: Process] = [:]
        for name in ["d1", "d2"] {
            daemons[name] = try harness.startExtraDaemon(name, config: config(name, harness),
                                                         environment: [SpoolDaemon.leaseFilesVariable: "lease-files"])
            #expect(harness.extraLog(name).contains("claims are lease files only"))
        }
        return daemons
    }

    /// The entries of `batch` a daemon's log says may have been sent after its claim's lease time.
    static func linesToldSentLate(_ log: String, batch: String) -> Set<Int> {
        let prefix = "id=.\(batch).jsonl."
        return Set(log.split(separator: "\n").filter { $0.contains("passed its last check before its claim's lease time") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) }
        })
    }

    /// The daemon whose log says it runs the batch, of `names`.
    static func owner(of names: [String], _ harness: Harness) throws -> String {
        let owners = names.filter { SharedBatchTests.runs(harness.extraLog($0)) > 0 }
        #expect(owners.count == 1, "one daemon runs the batch at a time: \(owners)")
        return try #require(owners.first)
    }

    /// Lease files, as on a filesystem without locks: a paused daemon keeps no lock for its
    /// claim, so its lease expires and the other daemon takes the batch over. The owner,
    /// woken, finds its claim taken: it stops the batch's lines and commits nothing more.
    @Test func aPausedOwnerWhoseClaimWasTakenWritesNothingMoreAndTheTakerFinishes() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let daemons = try Self.startWithLeaseFiles(harness)
        let count = 600
        let lines = (0..<count).map { BatchTests.line("p-\($0)", stub: ["latency_ms": 100]) }
        try BatchTests.dropBatch(harness, "paused", lines)
        try waitUntil("the output grows", timeout: 60) { Self.outputLength(harness, "paused") > 30_000 }
        let owner = try Self.owner(of: ["d1", "d2"], harness)
        let other = owner == "d1" ? "d2" : "d1"
        let victim = try #require(daemons[owner])
        kill(victim.processIdentifier, SIGSTOP)
        // Never left stopped, and stopped by its pid too: a daemon left running by one run of
        // this test was seen (its Process no longer said it ran).
        defer {
            kill(victim.processIdentifier, SIGCONT)
            kill(victim.processIdentifier, SIGTERM)
        }
        // Stopped, it writes nothing: what its journal has now is all it committed.
        let committedAtStop = try Self.committed(harness.layout.batchJournal("paused"))
        #expect(!committedAtStop.isEmpty && committedAtStop.count < count, "paused mid-batch: \(committedAtStop.count)")
        // The lease (3 s) and its margin pass; the other daemon takes the claim and resumes.
        try waitUntil("\(other) resumes the batch", timeout: 60) { harness.extraLog(other).contains("batch resumed") }
        try waitUntil("\(other) sends lines of its own", timeout: 60) {
            try harness.stubPosts().filter { $0.path.hasPrefix("/\(other)/") }.count >= 40
        }
        // The fence: the taker writes to copies of its own under the names, so that the
        // owner, however long it was paused and wherever, has nothing open that a name
        // leads to; what it writes when it wakes reaches no one.
        for path in [harness.layout.batchPartial("paused"), harness.layout.batchJournal("paused")] {
            let held = try Self.descriptors(of: victim.processIdentifier, openOn: path)
            #expect(held.isEmpty, "the paused owner still holds \(path) open (descriptors \(held))")
        }
        let continuedAt = Date().timeIntervalSince1970
        kill(victim.processIdentifier, SIGCONT)
        try waitUntil("\(owner) finds its claim taken", timeout: 30) {
            harness.extraLog(owner).contains("the batch's claim was lost to another daemon")
        }
        let summary = try BatchTests.waitForSummary(harness, "paused", timeout: 120)
        #expect(summary["status"] as? String == "completed")
        #expect(victim.isRunning, "the paused owner goes on running")
        #expect(!harness.extraLog(other).contains("batch accepted"), "taken over from the journal, not started again")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("paused"))
        let found = BatchTests.byID(output)
        // A write of the old owner after its loss would repeat a line or cut another.
        #expect(output.count == count, "one output line per input line, none repeated: \(output.count)")
        #expect(found.count == count)
        for index in 0..<count {
            let content = Harness.content(of: (found["p-\(index)"]?["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:])
            #expect(content?.hasPrefix("Echo: prompt of p-\(index)") == true, "p-\(index): \(String(describing: found["p-\(index)"]))")
        }
        let posts = try harness.stubPosts()
        var sent: [String: Int] = [:]
        for post in posts { sent[post.prompt, default: 0] += 1 }
        let committedAndSentAgain = committedAtStop.filter { (sent["prompt of p-\($0)"] ?? 0) > 1 }.sorted()
        #expect(committedAndSentAgain.isEmpty, "committed before the pause, then sent again: \(committedAndSentAgain.prefix(10))")
        #expect(Set(posts.map(\.prompt)).count == count)
        // Woken, the old owner sends none of the batch's lines: its lines in flight when it
        // was paused end there unwritten, and the ones it had queued are dropped. The one
        // exception no check can close: a line paused between its last check and its send
        // goes as the owner wakes, and the owner tells of it.
        let ownerLog = harness.extraLog(owner)
        let toldLate = Self.linesToldSentLate(ownerLog, batch: "paused")
        let sentAfterWaking = posts.filter { $0.path.hasPrefix("/\(owner)/") && $0.at > continuedAt }
        let repeated = posts.count - Set(posts.map(\.prompt)).count
        // Lines handed to libcurl before the pause and not yet sent: held back when it woke.
        let heldBack = ownerLog.components(separatedBy: "before the line went").count - 1
        print("paused batch of \(count) lines: \(owner) paused with \(committedAtStop.count) committed; \(other) resumed it; "
              + "\(sentAfterWaking.count) lines sent by \(owner) after it woke, \(toldLate.count) told of as maybe sent late; "
              + "\(repeated) lines sent twice in all; \(heldBack) held back by libcurl's last check before sending")
        let untold = sentAfterWaking.filter { post in !toldLate.contains { post.prompt == "prompt of p-\($0)" } }
        #expect(untold.isEmpty, "sent by the owner after it lost the claim, untold: \(untold.prefix(5).map(\.prompt))")
        #expect(toldLate.count <= 8, "only lines past their last check when paused (concurrency 8): \(toldLate.sorted())")
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, "paused")))
        #expect(!Syscall.isPresent(harness.layout.batchJournal("paused")))
    }

    /// The owner stopped after its look at the claim and before what it allows
    /// (`LLMSPOOL_TEST_BATCH_STOP`): in its first group commit, before the group's writes (the
    /// same seen by stopping it with gdb at the `fdatasync` of its output), or at the batch's
    /// end, before the publication. Woken only once the other daemon has taken the batch over
    /// and published it, it finds the names of the output and the journal free. Before, in a
    /// commit, it gave them back (`written again from the file still open`), and the other
    /// daemon then ended that journal as an orphan whose input left, publishing `cancelled`
    /// over the completed batch; at its end, it logged an error as if the spool had failed.
    /// Now it asks the claim again around the naming and gives the batch up, and the end
    /// published stays as it was.
    @Test(arguments: ["commit", "publish"]) func anOwnerPausedBetweenItsClaimCheckAndItsWritesRevivesNoNameOfAnEndedBatch(point: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // The owner alone at first, so that it is the one to stop; the other started once it has.
        let owner = "d1"
        let victim = try harness.startExtraDaemon(owner, config: Self.config(owner, harness),
                                                  environment: [SpoolDaemon.leaseFilesVariable: "lease-files", "LLMSPOOL_TEST_BATCH_STOP": point])
        var other: Process?
        defer {
            kill(victim.processIdentifier, SIGCONT)
            kill(victim.processIdentifier, SIGTERM)
            if let other { kill(other.processIdentifier, SIGTERM) }
        }
        let count = 300
        try BatchTests.dropBatch(harness, "b", (0..<count).map { BatchTests.line("p-\($0)", stub: ["latency_ms": 100]) })
        try waitUntil("the batch's owner stops at \(point)", timeout: 120) { harness.extraLog(owner).contains("batch test stop") }
        other = try harness.startExtraDaemon("d2", config: Self.config("d2", harness), environment: [SpoolDaemon.leaseFilesVariable: "lease-files"])
        // The other daemon takes the batch over once the lease has run out, and ends it.
        let summary = try BatchTests.waitForSummary(harness, "b", timeout: 120)
        #expect(summary["status"] as? String == "completed")
        try waitUntil("the journal of the ended batch goes", timeout: 30) { !Syscall.isPresent(harness.layout.batchJournal("b")) }
        let published = try Data(contentsOf: URL(fileURLWithPath: harness.layout.batchSummary("b")))
        kill(victim.processIdentifier, SIGCONT)
        try waitUntil("\(owner) finds its claim taken", timeout: 30) {
            let log = harness.extraLog(owner)
            return log.contains("the batch's claim was lost to another daemon") || log.contains("the batch's end was not published here")
        }
        let afterStop = harness.extraLog(owner).components(separatedBy: "batch test stop").last ?? ""
        #expect(!afterStop.contains(" error: "), "nothing failed: \(afterStop.suffix(1500))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: harness.layout.batchSummary("b"))) == published, "the summary published stays as it was")
        // Named again, they stood before the claim's loss was logged.
        #expect(!Syscall.isPresent(harness.layout.batchJournal("b")), "the ended batch's journal was given its name again")
        #expect(!Syscall.isPresent(harness.layout.batchPartial("b")), "the ended batch's output was given its name again")
        #expect(!harness.extraLog(owner).contains("written again from the file still open"))
        #expect(victim.isRunning)
        let output = try BatchTests.outputLines(harness.layout.batchOutput("b"))
        #expect(output.count == count && BatchTests.byID(output).count == count, "one line per custom_id: \(output.count)")
        #expect(output.allSatisfy { $0["error"] is NSNull }, "every line answered, none cancelled")
    }

    /// The owner paused just before publishing its end; the other daemon publishes it, the
    /// consumer takes output and summary away and submits a new file of the name, which the
    /// other daemon begins. Before, the owner, woken, published the new batch's unfinished
    /// output under the old summary and removed the new batch's journal and list of
    /// custom_ids (4 runs of 4). Now it asks the claim again just before its plan.
    @Test func anOwnerWokenAtItsEndLeavesANewBatchOfTheNameAlone() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let owner = try harness.startExtraDaemon("d1", config: Self.config("d1", harness),
                                                 environment: [SpoolDaemon.leaseFilesVariable: "lease-files", "LLMSPOOL_TEST_BATCH_STOP": "publish"])
        var other: Process?
        defer {
            for daemon in [owner] + (other.map { [$0] } ?? []) {
                kill(daemon.processIdentifier, SIGCONT)
                kill(daemon.processIdentifier, SIGTERM)
            }
        }
        try BatchTests.dropBatch(harness, "b", (0..<60).map { BatchTests.line("first-\($0)", stub: ["latency_ms": 50]) })
        try waitUntil("d1 stops before publishing", timeout: 60) { harness.extraLog("d1").contains("batch test stop") }
        other = try harness.startExtraDaemon("d2", config: Self.config("d2", harness), environment: [SpoolDaemon.leaseFilesVariable: "lease-files"])
        let first = try BatchTests.waitForSummary(harness, "b", timeout: 120)
        #expect((first["request_counts"] as? [String: Any])?["total"] as? Int == 60)
        try waitUntil("the first batch's files go", timeout: 30) {
            !Syscall.isPresent(harness.layout.batchJournal("b")) && !Syscall.isPresent(harness.layout.batchRequest("b"))
        }
        // The consumer takes the end away and submits the next file of the name.
        try Syscall.rename(harness.layout.batchOutput("b"), harness.root + "/first.jsonl")
        try Syscall.rename(harness.layout.batchSummary("b"), harness.root + "/first.batch.json")
        let count = 200
        try BatchTests.dropBatch(harness, "b", (0..<count).map { BatchTests.line("second-\($0)", stub: ["latency_ms": 200]) })
        try waitUntil("d2 runs the new batch", timeout: 60) { Self.outputLength(harness, "b") > 0 }
        kill(owner.processIdentifier, SIGCONT)
        try waitUntil("d1 gives its end up", timeout: 30) { harness.extraLog("d1").contains("the batch's end was not published here") }
        #expect(Syscall.isPresent(harness.layout.batchJournal("b")), "the new batch's journal stays")
        #expect(Syscall.isPresent(harness.layout.batchIDList("b")), "the new batch's list of custom_ids stays")
        #expect(!Syscall.isPresent(harness.layout.batchSummary("b")), "no summary of the old batch over the new one")
        let summary = try BatchTests.waitForSummary(harness, "b", timeout: 120)
        #expect((summary["request_counts"] as? [String: Any])?["total"] as? Int == count)
        let output = try BatchTests.outputLines(harness.layout.batchOutput("b"))
        #expect(output.count == count && BatchTests.byID(output).count == count, "one line per custom_id: \(output.count)")
        #expect(output.allSatisfy { ($0["custom_id"] as? String)?.hasPrefix("second-") == true })
    }

    /// The taker paused in its takeover, after its look at the claim and before its copy of
    /// the journal takes the name (`LLMSPOOL_TEST_BATCH_STOP=takeover`; gdb at that `rename`
    /// showed the same), while the first owner takes the claim back, runs the batch and
    /// publishes it. Before, the taker, woken, put its stale copy (nothing committed) under
    /// the journal's name: a daemon then ended it as an orphan whose input left and published
    /// `cancelled` over the completed batch, its output emptied (3 runs of 3); woken mid-run,
    /// it replaced the live journal and about 130 committed lines were sent again. Now the
    /// copy takes the name only while it still leads to the file copied, and is taken back
    /// when the claim turns out lost.
    @Test func aTakerPausedBeforeItsJournalCopyTakesTheNameLeavesTheEndedBatchAlone() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let first = try harness.startExtraDaemon("d1", config: Self.config("d1", harness),
                                                 environment: [SpoolDaemon.leaseFilesVariable: "lease-files", "LLMSPOOL_TEST_BATCH_STOP": "commit"])
        var taker: Process?
        defer {
            for daemon in [first] + (taker.map { [$0] } ?? []) {
                kill(daemon.processIdentifier, SIGCONT)
                kill(daemon.processIdentifier, SIGTERM)
            }
        }
        let count = 300
        try BatchTests.dropBatch(harness, "b", (0..<count).map { BatchTests.line("p-\($0)", stub: ["latency_ms": 100]) })
        try waitUntil("d1 stops in its first group commit", timeout: 60) { harness.extraLog("d1").contains("batch test stop") }
        let d2 = try harness.startExtraDaemon("d2", config: Self.config("d2", harness),
                                              environment: [SpoolDaemon.leaseFilesVariable: "lease-files", "LLMSPOOL_TEST_BATCH_STOP": "takeover"])
        taker = d2
        try waitUntil("d2 stops in its takeover's copy", timeout: 60) { harness.extraLog("d2").contains("batch test stop") }
        kill(first.processIdentifier, SIGCONT)
        let summary = try BatchTests.waitForSummary(harness, "b", timeout: 120)
        #expect(summary["status"] as? String == "completed")
        try waitUntil("the journal of the ended batch goes", timeout: 30) { !Syscall.isPresent(harness.layout.batchJournal("b")) }
        let published = try Data(contentsOf: URL(fileURLWithPath: harness.layout.batchSummary("b")))
        kill(d2.processIdentifier, SIGCONT)
        do {
            try waitUntil("d2 finds the batch's files changed hands", timeout: 30) {
                harness.extraLog("d2").contains("the batch's files changed hands while they were copied")
            }
        } catch {
            throw HarnessError("\(error): \(harness.extraLog("d2").split(separator: "\n").filter { !$0.contains(" debug: ") }.suffix(8).joined(separator: "\n"))")
        }
        #expect(!Syscall.isPresent(harness.layout.batchJournal("b")), "the stale copy took the ended batch's journal name")
        let afterStop = harness.extraLog("d2").components(separatedBy: "batch test stop").last ?? ""
        #expect(!afterStop.contains(" error: "), "nothing failed: \(afterStop.suffix(1500))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: harness.layout.batchSummary("b"))) == published, "the summary published stays as it was")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("b"))
        #expect(output.count == count && BatchTests.byID(output).count == count, "one line per custom_id: \(output.count)")
        #expect(output.allSatisfy { $0["error"] is NSNull }, "every line answered, none cancelled")
    }

    /// One daemon with lease files, three batches of slow lines queued, paused past its lease
    /// and woken: every queued line finds the lease expired and waits for its renewal. Each
    /// such line freed its slot for the next one a call deeper, and the engine's thread
    /// overflowed its stack (SIGSEGV after 178 waiting lines, 3 runs of 3). Now it goes on.
    @Test func aDaemonWokenPastItsLeaseWithManyLinesQueuedGoesOn() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let daemon = try harness.startExtraDaemon("d1", config: Self.config("d1", harness),
                                                  environment: [SpoolDaemon.leaseFilesVariable: "lease-files"])
        defer {
            kill(daemon.processIdentifier, SIGCONT)
            kill(daemon.processIdentifier, SIGTERM)
        }
        let names = ["q1", "q2", "q3"]
        for name in names {
            try BatchTests.dropBatch(harness, name, (0..<600).map { BatchTests.line("\(name)-\($0)", stub: ["latency_ms": 300]) })
        }
        try waitUntil("every batch has output", timeout: 60) { names.allSatisfy { Self.outputLength(harness, $0) > 0 } }
        // Whether the woken engine starts lines before the keeper renews the lease is a race:
        // paused again (at most 4 times) until many lines have waited.
        var waited = 0
        for _ in 0..<4 where waited < 50 && daemon.isRunning {
            kill(daemon.processIdentifier, SIGSTOP)
            let atStop = names.map { Self.outputLength(harness, $0) }
            // The pause itself, past the lease (3 s).
            let stoppedAt = Date()
            while Date().timeIntervalSince(stoppedAt) < 5 { usleep(100_000) }
            kill(daemon.processIdentifier, SIGCONT)
            try waitUntil("every batch goes on", timeout: 60) {
                !daemon.isRunning || zip(names, atStop).allSatisfy { Self.outputLength(harness, $0) > $1 }
            }
            waited = harness.extraLog("d1").components(separatedBy: "the line waits for its renewal").count - 1
        }
        print("woken past its lease: \(waited) lines waited for the renewal")
        #expect(waited > 0, "the scenario: lines woken past the lease wait for its renewal")
        #expect(daemon.isRunning, "\(harness.extraLog("d1").suffix(3000))")
        #expect(!harness.extraLog("d1").contains("crashed"))
    }

    /// The owner paused past its lease and the batch's input deleted: the other daemon
    /// ends the batch as cancelled, writing its cancelled lines to copies of its own, so
    /// that the owner, woken, has nothing open that the published output's name leads to.
    @Test func aPausedOwnersBatchWhoseInputLeftIsEndedInFilesOfTheTakersOwn() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let daemons = try Self.startWithLeaseFiles(harness)
        let count = 300
        try BatchTests.dropBatch(harness, "orphan", (0..<count).map { BatchTests.line("o-\($0)", stub: ["latency_ms": 100]) })
        try waitUntil("the output grows", timeout: 60) { Self.outputLength(harness, "orphan") > 20_000 }
        let owner = try Self.owner(of: ["d1", "d2"], harness)
        let victim = try #require(daemons[owner])
        kill(victim.processIdentifier, SIGSTOP)
        defer {
            kill(victim.processIdentifier, SIGCONT)
            kill(victim.processIdentifier, SIGTERM)
        }
        let committedAtStop = try Self.committed(harness.layout.batchJournal("orphan"))
        try Syscall.unlink(harness.layout.batchRequest("orphan"))
        let summary = try BatchTests.waitForSummary(harness, "orphan", timeout: 120)
        #expect(summary["status"] as? String == "cancelled")
        let held = try Self.descriptors(of: victim.processIdentifier, openOn: harness.layout.batchOutput("orphan"))
        #expect(held.isEmpty, "the paused owner holds the published output open (descriptors \(held))")
        kill(victim.processIdentifier, SIGCONT)
        try waitUntil("\(owner) finds the batch gone", timeout: 30) {
            let log = harness.extraLog(owner)
            return log.contains("the batch's claim was lost to another daemon") || log.contains("batch cancelled")
        }
        let output = try BatchTests.outputLines(harness.layout.batchOutput("orphan"))
        #expect(output.count == count && BatchTests.byID(output).count == count, "one line per custom_id: \(output.count)")
        let succeeded = Set(output.filter { $0["error"] is NSNull }.compactMap { $0["custom_id"] as? String })
        #expect(committedAtStop.allSatisfy { succeeded.contains("o-\($0)") }, "the lines committed before the pause kept as they were")
    }

    /// Two daemons on one spool; the batch's owner killed with the other paused, so that no
    /// daemon runs the batch while `change` is made to its input; then the other wakes.
    struct Orphaned {
        var survivor: Process
        var other: String
        var committedAtKill: Set<Int>
        var committedOutput: [UInt8]
    }

    static func orphan(_ harness: Harness, _ name: String, count: Int, change: () throws -> Void) throws -> Orphaned {
        try harness.startStub()
        let daemons = ["d1": try harness.startExtraDaemon("d1", config: Self.config("d1", harness)),
                       "d2": try harness.startExtraDaemon("d2", config: Self.config("d2", harness))]
        let lines = (0..<count).map { BatchTests.line("o-\($0)", stub: ["latency_ms": 100]) }
        try BatchTests.dropBatch(harness, name, lines)
        try waitUntil("the output grows", timeout: 60) { Self.outputLength(harness, name) > 10_000 }
        let owner = try Self.owner(of: ["d1", "d2"], harness)
        let other = owner == "d1" ? "d2" : "d1"
        let survivor = try #require(daemons[other])
        let victim = try #require(daemons[owner])
        kill(survivor.processIdentifier, SIGSTOP)
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        let committedAtKill = try Self.committed(harness.layout.batchJournal(name))
        #expect(!committedAtKill.isEmpty && committedAtKill.count < count, "killed mid-batch: \(committedAtKill.count)")
        #expect(Syscall.isPresent(harness.layout.batchIDList(name)), "the owner kept the batch's custom_ids")
        let committedLength = try BatchCancelWhileStoppedTests.committedLength(harness.layout.batchJournal(name))
        let committedOutput = Array(try Data(contentsOf: URL(fileURLWithPath: harness.layout.batchPartial(name))).prefix(committedLength))
        do {
            try change()
        } catch {
            kill(survivor.processIdentifier, SIGCONT)
            throw error
        }
        kill(survivor.processIdentifier, SIGCONT)
        return Orphaned(survivor: survivor, other: other, committedAtKill: committedAtKill, committedOutput: committedOutput)
    }

    /// The owner is killed and the input deleted before the other daemon (paused meanwhile,
    /// so that it cannot take the batch over first) looks again: no daemon will ever cancel
    /// or resume it, and the running daemon ends it, cancelled: every line once, the
    /// committed ones as they were and the rest `batch_cancelled`, named from the list of
    /// custom_ids the owner kept at acceptance.
    @Test func aJournalWhoseInputLeftWhileNoDaemonRanItIsEndedByARunningDaemon() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let count = 400
        let orphaned = try Self.orphan(harness, "orphan", count: count) { try Syscall.unlink(harness.layout.batchRequest("orphan")) }
        let (survivor, other, committedAtKill, committedOutput) = (orphaned.survivor, orphaned.other, orphaned.committedAtKill, orphaned.committedOutput)
        defer { kill(survivor.processIdentifier, SIGTERM) }
        let summary = try BatchTests.waitForSummary(harness, "orphan", timeout: 30)
        #expect(summary["status"] as? String == "cancelled")
        #expect(harness.extraLog(other).contains("its lines never sent named in its output as cancelled"), "\(harness.extraLog(other).suffix(2000))")
        #expect(!harness.extraLog(other).contains("batch resumed"), "ended as an orphan, not taken over")
        #expect(survivor.isRunning && harness.extraLog(other).components(separatedBy: "info: watching outgoing=").count == 2,
                "by the running daemon, without a restart")
        // The input is gone; the lines never committed are named from the kept list.
        let outputBytes = Array(try Data(contentsOf: URL(fileURLWithPath: harness.layout.batchOutput("orphan"))))
        #expect(outputBytes.starts(with: committedOutput), "the committed lines come first, unchanged")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("orphan"))
        let found = BatchTests.byID(output)
        #expect(output.count == count && found.count == count,
                "every line once: \(output.count) lines, \(found.count) ids, \(committedAtKill.count) committed")
        for index in 0..<count {
            let line = found["o-\(index)"] ?? [:]
            if committedAtKill.contains(index) {
                #expect(line["error"] is NSNull, "o-\(index) was committed before the kill: \(line)")
            } else {
                #expect((line["error"] as? [String: Any])?["code"] as? String == "batch_cancelled", "o-\(index) was not: \(line)")
            }
        }
        let counts = summary["request_counts"] as? [String: Any]
        #expect(counts?["total"] as? Int == count)
        #expect(counts?["completed"] as? Int == committedAtKill.count)
        #expect(counts?["failed"] as? Int == count - committedAtKill.count)
        #expect(try harness.stubPosts().filter { $0.path.hasPrefix("/\(other)/") }.isEmpty, "the other daemon sent none of its lines")
        // The summary comes first; the input, the list and the journal go after it.
        try waitUntil("the batch's files in state go", timeout: 20) { harness.files(in: harness.layout.batches).isEmpty }
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, "orphan")))
    }

    /// The same, with the output cut short of what the journal committed (writes lost on a
    /// server, a cut by hand) before the input leaves: the running daemon still ends the
    /// batch, cancelled, from what the output holds, instead of failing its copy at every
    /// sweep.
    @Test func aJournalWhoseOutputLostCommittedLinesIsStillEndedByARunningDaemon() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let count = 400
        let orphaned = try Self.orphan(harness, "short", count: count) {
            // At a line's end: a torn line would stay torn, as on a local spool.
            let partial = harness.layout.batchPartial("short")
            let bytes = try FileReader.prefix(path: partial, limit: 1 << 24)
            let cut = (bytes[..<(bytes.count / 2)].lastIndex(of: UInt8(ascii: "\n")) ?? -1) + 1
            #expect(truncate(partial, off_t(cut)) == 0)
            try Syscall.unlink(harness.layout.batchRequest("short"))
        }
        defer { kill(orphaned.survivor.processIdentifier, SIGTERM) }
        let summary = try BatchTests.waitForSummary(harness, "short", timeout: 30)
        #expect(summary["status"] as? String == "cancelled")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("short"))
        let found = BatchTests.byID(output)
        #expect(found.count == output.count, "no custom_id twice: \(output.count) lines, \(found.count) ids")
        #expect(output.count < count, "the lines cut from the output stay lost: \(output.count)")
        #expect(!harness.extraLog(orphaned.other).contains("cannot take over the output"))
    }

    /// The same, but the input replaced by another file while no daemon ran it: the daemon
    /// that wakes ends the old batch (cancelled, every line once) and then runs the new
    /// file under the claim it holds, to the end, with no line of either sent twice.
    @Test func aJournalWhoseInputWasReplacedWhileNoDaemonRanItEndsThenTheNewFileRuns() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let count = 400
        let replacement = (0..<40).map { BatchTests.line("n-\($0)", stub: ["latency_ms": 700]) }
        let orphaned = try Self.orphan(harness, "swap", count: count) { try BatchTests.dropBatch(harness, "swap", replacement) }
        defer { kill(orphaned.survivor.processIdentifier, SIGTERM) }
        let log = { harness.extraLog(orphaned.other) }
        let first = try BatchTests.waitForSummary(harness, "swap", timeout: 30)
        #expect(first["status"] as? String == "cancelled", "the old batch ends first: \(first)")
        let counts = first["request_counts"] as? [String: Any]
        #expect(counts?["total"] as? Int == count && counts?["completed"] as? Int == orphaned.committedAtKill.count, "\(String(describing: counts))")
        #expect(log().contains("the batch's input was replaced while no daemon ran it"), "\(log().suffix(2000))")
        try waitUntil("the new file's batch ends", timeout: 120) {
            ((try? harness.json(harness.layout.batchSummary("swap")))?["request_counts"] as? [String: Any])?["total"] as? Int == 40
        }
        let summary = try harness.json(harness.layout.batchSummary("swap"))
        #expect(summary["status"] as? String == "completed" && (summary["request_counts"] as? [String: Any])?["completed"] as? Int == 40,
                "\(summary) \(log().suffix(2000))")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("swap"))
        #expect(output.count == 40 && Set(BatchTests.byID(output).keys) == Set((0..<40).map { "n-\($0)" }))
        let sent = try harness.stubPosts().filter { $0.path.hasPrefix("/\(orphaned.other)/") }.map(\.prompt)
        #expect(sent.count == 40 && Set(sent) == Set((0..<40).map { "prompt of n-\($0)" }),
                "the waking daemon sent the new lines once each and none of the old: \(sent.count)")
        try waitUntil("the batch's files in state go", timeout: 20) { harness.files(in: harness.layout.batches).isEmpty }
    }
}
