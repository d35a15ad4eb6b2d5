import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// The client commands as a newcomer meets them: each run as a subprocess, against a spool
/// found through $LLMSPOOL_CONFIG where the point is finding it.
@Suite(.serialized) struct ClientCommandTests {
    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    func requestText(_ prompt: String, stub: [String: Any]? = nil) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: Harness.request(prompt, stub: stub)), as: UTF8.self)
    }

    /// Runs `llmspool` in `directory` through the shell, with `environment` added.
    func cli(in directory: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Harness.Finished {
        var merged = ProcessInfo.processInfo.environment
        merged["OPENAI_API_KEY"] = nil
        merged["LLMSPOOL_CONFIG"] = nil
        merged.merge(environment) { $1 }
        return try Harness.spawnAndWait(["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory, Harness.binary] + arguments, environment: merged)
    }

    @Test func everyArgumentIsCheckedBeforeAnythingIsDropped() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let file = harness.root + "/request.json"
        try requestText("typo").write(toFile: file, atomically: true, encoding: .utf8)
        let typo = try harness.cli(["submit", file, "--timeout", "abc", "--wait", "--spool", harness.layout.root])
        #expect(typo.status == 2, "\(typo.stderr)")
        #expect(typo.stderr.contains("--timeout"), "\(typo.stderr)")
        #expect(typo.stdout.isEmpty, "no id printed")
        #expect(harness.files(in: harness.layout.outgoing).isEmpty, "nothing was dropped")
        let badID = try harness.cli(["submit", file, "--id", "-dash", "--spool", harness.layout.root])
        #expect(badID.status == 2, "\(badID.stderr)")
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        for arguments in [["status", "--interval", "soon", "--watch"], ["status", "extra"], ["clean", "extra", "--older-than", "1d"],
                          ["retry", "--all-failed", "extra"], ["cancel", "--all", "extra"], ["wait", "x", "--timeout", "-1"],
                          ["queue", "extra"]] {
            // `timeout` ends a command that ignores a bad argument and keeps watching.
            let finished = try harness.cli(["/usr/bin/timeout", "-s", "KILL", "20", Harness.binary] + arguments + ["--spool", harness.layout.root],
                                           viaProgram: true)
            #expect(finished.status == 2, "\(arguments): \(finished.stderr)")
            #expect(finished.stderr.contains("see `llmspool"), "\(arguments): \(finished.stderr)")
        }
    }

    /// The user's own file, outside the spool, named through a link (a prompt kept under
    /// a stable name): submitted as the file the link leads to.
    @Test func submitFollowsALinkToTheUsersFile() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let file = harness.root + "/request.json"
        let text = try requestText("through a link")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(symlink(file, harness.root + "/current.json") == 0)
        let submitted = try harness.cli(["submit", harness.root + "/current.json", "--id", "linked", "--spool", harness.layout.root])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let dropped = try Syscall.lstat(harness.layout.request("linked"))
        #expect(dropped.st_mode & S_IFMT == S_IFREG, "a file of its own in outgoing, not a link")
        #expect(try String(contentsOfFile: harness.layout.request("linked"), encoding: .utf8) == text)
    }

    @Test func cleanDatesAFailureByItsOwnTimeNotTheRequestFile() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        // An old file, as `cp -p` or `mv` of yesterday's request gives.
        let hidden = "\(harness.layout.outgoing)/.old.json.tmp"
        try DurableFile.write(Array(try requestText("refused", stub: ["status": 400]).utf8), to: hidden, syncDirectory: false)
        var times = [timespec(tv_sec: time(nil) - 2 * 86_400, tv_nsec: 0), timespec(tv_sec: time(nil) - 2 * 86_400, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, hidden, &times, 0) == 0)
        try Syscall.rename(hidden, harness.layout.request("old"))
        try waitUntil("it failed", timeout: 20) { exists(harness.layout.errorRecord("old")) }
        let cleaned = try harness.cli(["clean", "--older-than", "1h", "--spool", harness.layout.root])
        #expect(cleaned.status == 0, "\(cleaned.stderr)")
        #expect(cleaned.stdout.contains("0 failed requests"), "\(cleaned.stdout)")
        #expect(exists(harness.layout.failedRequest("old")) && exists(harness.layout.errorRecord("old")))
        #expect(JSONObject(try harness.cli(["show", "old", "--spool", harness.layout.root]).stdout)?["state"] as? String == "failed")
        // Its own age counts: with a cut-off after the failure, it goes.
        let later = try harness.cli(["clean", "--older-than", "0s", "--spool", harness.layout.root])
        #expect(later.stdout.contains("1 failed requests"), "\(later.stdout)")
    }

    /// `clean` removes an ended batch's files (dated by its summary, which goes last) and a
    /// refused batch file with its record, and leaves a batch whose name is in `outgoing`.
    @Test func cleanRemovesEndedAndRefusedBatchesButNotARunningOne() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try BatchTests.dropBatch(harness, "ended", [BatchTests.line("a"), BatchTests.line("b", stub: ["status": 400])])
        _ = try BatchTests.waitForSummary(harness, "ended", timeout: 30)
        try BatchTests.dropBatch(harness, "refused", [BatchTests.line("a"), BatchTests.line("a")])
        try waitUntil("the batch is refused", timeout: 30) { exists(harness.layout.failedBatch("refused")) }
        try BatchTests.dropBatch(harness, "again", [BatchTests.line("a")])
        _ = try BatchTests.waitForSummary(harness, "again", timeout: 30)
        // A new file under the name: the old summary is not this batch's to lose.
        try BatchTests.dropBatch(harness, "again", [BatchTests.line("b", stub: ["latency_ms": 60_000])])
        try waitUntil("the new batch runs", timeout: 30) { exists(harness.layout.batchJournal("again")) }
        let ended = [harness.layout.batchOutput("ended"), harness.layout.batchErrors("ended"), harness.layout.batchSummary("ended")]
        #expect(ended.allSatisfy(exists), "the batch ended with a failed line: output, errors file and summary")

        // An entry that cannot be removed (a folder under an output's name) is named, and
        // the rest is cleaned all the same. Before, clean stopped there, every time.
        try FileManager.default.createDirectory(atPath: harness.layout.batchOutput("stuck"), withIntermediateDirectories: false)
        try DurableFile.write(Array("{}".utf8), to: harness.layout.batchSummary("stuck"))
        // A result that cannot be removed keeps its task record, which `show` reads.
        try harness.drop("kept", Harness.request("a result put out of reach"))
        try waitUntil("kept is answered", timeout: 30) { exists(harness.layout.result("kept")) && exists(harness.layout.taskRecord("kept")) }
        try Syscall.unlink(harness.layout.result("kept"))
        try FileManager.default.createDirectory(atPath: harness.layout.result("kept"), withIntermediateDirectories: false)
        let young = try harness.cli(["clean", "--older-than", "1h", "--spool", harness.layout.root])
        #expect(young.stdout == "removed 0 results, 0 failed requests, 0 task records, 0 batches\n", "\(young.stdout)\(young.stderr)")
        let cleaned = try harness.cli(["clean", "--older-than", "0s", "--spool", harness.layout.root])
        #expect(cleaned.stdout == "removed 0 results, 0 failed requests, 0 task records, 2 batches\n", "\(cleaned.stdout)\(cleaned.stderr)")
        #expect(cleaned.status == 1)
        #expect(cleaned.stderr.contains("cannot be removed") && cleaned.stderr.contains(harness.layout.batchOutput("stuck")), "\(cleaned.stderr)")
        #expect(exists(harness.layout.batchSummary("stuck")), "its summary stays, for a later clean")
        #expect(cleaned.stderr.contains(harness.layout.result("kept")), "\(cleaned.stderr)")
        #expect(exists(harness.layout.taskRecord("kept")), "the record of a result that stays stays too")
        #expect(!ended.contains(where: exists))
        #expect(!exists(harness.layout.failedBatch("refused")) && !exists(harness.layout.batchErrorRecord("refused")))
        #expect(exists(harness.layout.batchSummary("again")) && exists(harness.layout.batchRequest("again")),
                "the running batch's name is kept: \(harness.log.split(separator: "\n").filter { $0.contains("again") }.joined(separator: "\n"))")
    }

    /// A failed request and a refused batch of one name: each keeps its own record and is
    /// dated and cleaned by it, not by the other's.
    @Test func cleanRemovesAFailedRequestAndARefusedBatchOfOneName() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("twin", Harness.request("refused twin", stub: ["status": 400]))
        try waitUntil("the request failed", timeout: 30) { exists(harness.layout.failedRequest("twin")) && exists(harness.layout.errorRecord("twin")) }
        try BatchTests.dropBatch(harness, "twin", [BatchTests.line("a"), BatchTests.line("a")])
        try waitUntil("the batch is refused", timeout: 30) { exists(harness.layout.failedBatch("twin")) }
        // Each is dated by its own record: the batch's refusal made old, the request's failure new.
        var record = try harness.json(harness.layout.batchErrorRecord("twin"))
        record["failed_at"] = "2020-01-01T00:00:00.000Z"
        try JSONSerialization.data(withJSONObject: record).write(to: URL(fileURLWithPath: harness.layout.batchErrorRecord("twin")))
        let batchOnly = try harness.cli(["clean", "--older-than", "1h", "--spool", harness.layout.root])
        #expect(batchOnly.stdout == "removed 0 results, 0 failed requests, 0 task records, 1 batches\n", "\(batchOnly.stdout)")
        #expect(exists(harness.layout.errorRecord("twin")) && !exists(harness.layout.failedBatch("twin")))
        let cleaned = try harness.cli(["clean", "--older-than", "0s", "--spool", harness.layout.root])
        #expect(cleaned.status == 0, "\(cleaned.stderr)")
        #expect(cleaned.stdout == "removed 0 results, 1 failed requests, 1 task records, 0 batches\n", "\(cleaned.stdout)")
        #expect(harness.files(in: harness.layout.failed).filter { $0 != "superseded" }.isEmpty, "\(harness.files(in: harness.layout.failed))")
    }

    /// A request renamed to a safe id keeps its original name in `state/` while anything of
    /// it is left to show; `clean` takes the name with the last of it, and no sooner.
    @Test func cleanRemovesARenamedRequestsOriginalNameWithItsLastFile() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let id = RequestName.safeID(forRawName: Array("-dashed.json".utf8))
        try requestText("renamed").write(toFile: harness.layout.outgoing + "/-dashed.json", atomically: false, encoding: .utf8)
        try waitUntil("answered under its safe id", timeout: 30) { exists(harness.layout.result(id)) && !exists(harness.layout.request(id)) }
        try waitUntil("its record is written", timeout: 10) { exists(harness.layout.taskRecord(id)) }
        #expect(harness.layout.loadOriginalName(id) == "-dashed.json")
        // The name made old, its result and record new: the name stays while they do.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_577_836_800)], ofItemAtPath: harness.layout.originalName(id))
        _ = try harness.cli(["clean", "--older-than", "1h", "--spool", harness.layout.root])
        #expect(exists(harness.layout.originalName(id)) && exists(harness.layout.result(id)))
        let cleaned = try harness.cli(["clean", "--older-than", "0s", "--spool", harness.layout.root])
        #expect(cleaned.stdout == "removed 1 results, 0 failed requests, 1 task records, 0 batches\n", "\(cleaned.stdout)")
        #expect(!exists(harness.layout.originalName(id)), "\(harness.files(in: harness.layout.state))")
    }

    @Test func clientCommandsFindTheSpoolThroughTheConfigLikeRun() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.writeConfig([:])
        // A folder with a spool of its own, which no daemon watches: the config must win.
        let elsewhere = harness.root + "/elsewhere"
        try Syscall.mkdir(elsewhere, mode: 0o700)
        try SpoolLayout(root: elsewhere + "/spool").create()
        let environment = ["LLMSPOOL_CONFIG": harness.configPath]
        let file = harness.root + "/request.json"
        try requestText("found through the config").write(toFile: file, atomically: true, encoding: .utf8)
        let submitted = try cli(in: elsewhere, ["submit", file, "--id", "configured"], environment: environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        #expect(exists(harness.layout.request("configured")), "dropped into the configured spool")
        #expect(harness.files(in: elsewhere + "/spool/outgoing").isEmpty, "not into ./spool")
        #expect(submitted.stderr.contains("no daemon has been running"), "\(submitted.stderr)")
        let queue = try cli(in: elsewhere, ["queue"], environment: environment)
        #expect(queue.status == 0 && queue.stdout.contains("configured  queued"), "\(queue.stdout)\(queue.stderr)")
        // --config works on client commands too.
        let status = try cli(in: elsewhere, ["status", "--json", "--config", harness.configPath])
        #expect(JSONObject(status.stdout)?["queued"] as? Int == 1, "\(status.stdout)\(status.stderr)")

        try harness.startDaemon()
        let waited = try cli(in: elsewhere, ["wait", "configured", "--timeout", "30"], environment: environment)
        #expect(waited.status == 0, "\(waited.stderr)")
        #expect(waited.stdout == StubAnswer.content(prompt: "found through the config", tokens: 8))
        let shown = try cli(in: elsewhere, ["show", "configured"], environment: environment)
        #expect(JSONObject(shown.stdout)?["state"] as? String == "done")
        try waitUntil("the daemon's live status is written", timeout: 10) { LiveStatus.read(harness.layout) != nil }
        let second = try cli(in: elsewhere, ["submit", file, "--id", "second"], environment: environment)
        #expect(second.status == 0)
        #expect(!second.stderr.contains("no daemon"), "a daemon is running: \(second.stderr)")
    }

    @Test func demoRunsOutsideTheSourceTree() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let empty = harness.root + "/empty"
        try Syscall.mkdir(empty, mode: 0o700)
        let demo = try cli(in: empty, ["demo", "--timeout", "60"])
        #expect(demo.status == 0, "\(demo.stdout)\(demo.stderr)")
        #expect(demo.stdout.contains("hello: done"), "\(demo.stdout)")
        #expect(demo.stdout.contains("story: done"), "\(demo.stdout)")
        #expect(demo.stdout.contains("refused: failed"), "\(demo.stdout)")
        #expect(exists(empty + "/spool/incoming/hello.json"))
    }

    @Test func retryAllFailedArchivesAFailureALaterResultReplaced() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("twice", Harness.request("first try", stub: ["status": 400]))
        try waitUntil("it failed", timeout: 20) { exists(harness.layout.failedRequest("twice")) }
        try harness.drop("twice", Harness.request("second try"))
        try waitUntil("the new one is done", timeout: 20) { exists(harness.layout.result("twice")) }
        try harness.drop("stale", Harness.request("really refused", stub: ["status": 400]))
        try waitUntil("the other failed", timeout: 20) { exists(harness.layout.errorRecord("stale")) }

        // A running daemon's counts are of outcomes as they happened (README: `status`); the
        // spool's own count, without a daemon, counts each id once, by its later outcome.
        _ = harness.stopDaemon()
        let status = try #require(JSONObject(try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout))
        #expect(status["done"] as? Int == 1, "counted once, by its later outcome")
        #expect(status["failed"] as? Int == 1)
        try harness.startDaemon()
        let shown = try #require(JSONObject(try harness.cli(["show", "twice", "--spool", harness.layout.root]).stdout))
        #expect(shown["state"] as? String == "done")
        #expect(shown["error"] == nil, "no error block on a request that is done")

        let retried = try harness.cli(["retry", "--all-failed", "--spool", harness.layout.root])
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(retried.stdout == "archived superseded failure of twice\nrequeued stale\n", "\(retried.stdout)")
        #expect(exists(harness.layout.superseded + "/1.twice.json"))
        #expect(exists(harness.layout.superseded + "/1.twice.error.json"))
        #expect(!exists(harness.layout.request("twice")), "the stale failure is not sent again")
        try waitUntil("the real failure failed again", timeout: 20) { (try? harness.arrivals(of: "really refused").count) == 2 }
        #expect(try harness.arrivals(of: "first try").count == 1)
    }

    @Test func modesAreSetExplicitlyWhateverTheUmask() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.writeConfig(["group_readable": true])
        // Folders the daemon creates itself.
        try FileManager.default.removeItem(atPath: harness.layout.failed)
        // The shipped unit's UMask=0077, which must not take group_readable's bits away.
        let log = harness.root + "/umask.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let daemon = try Harness.spawnDaemonUnderShell("umask 077", ["run", "--config", harness.configPath], log: log)
        defer {
            if daemon.isRunning { daemon.terminate() }
            daemon.waitUntilExit()
        }
        try harness.drop("moded", Harness.request("modes"))
        try waitUntil("it is done", timeout: 20) { exists(harness.layout.result("moded")) }
        try waitUntil("its task record is written", timeout: 20) { exists(harness.layout.taskRecord("moded")) }
        #expect(try Syscall.lstat(harness.layout.result("moded")).st_mode & 0o777 == 0o640)
        #expect(try Syscall.lstat(harness.layout.taskRecord("moded")).st_mode & 0o777 == 0o640)
        try harness.drop("refused", Harness.request("refused", stub: ["status": 400]))
        try waitUntil("it failed", timeout: 20) { exists(harness.layout.errorRecord("refused")) }
        #expect(try Syscall.lstat(harness.layout.errorRecord("refused")).st_mode & 0o777 == 0o640)
        #expect(try Syscall.lstat(harness.layout.failed).st_mode & 0o777 == 0o750)
    }

    @Test func aMetricsPortAlreadyBoundIsRefused() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let port = try freePort()
        try harness.startDaemon(arguments: ["--metrics", "127.0.0.1:\(port)"])
        #expect(harness.log.contains("serving metrics"))
        // A second daemon on the same address must not share the port; `timeout` ends it if it does.
        let second = try harness.cli(["/usr/bin/timeout", "-s", "KILL", "20", Harness.binary, "run", "--config", harness.configPath, "--metrics",
                                      "127.0.0.1:\(port)"], viaProgram: true)
        #expect(second.status == 1, "refused, not left running: \(second.status) \(second.stderr)")
        #expect(second.stderr.contains("127.0.0.1:\(port)") && second.stderr.contains("in use"), "\(second.stderr)")
    }

    @Test func initGroupLetsAnotherUserSubmit() throws {
        guard Harness.isRoot, Harness.which("groupadd") != nil || exists("/usr/sbin/groupadd") else {
            print("skipped: needs root and groupadd to make a group and act as another user")
            return
        }
        let harness = try Harness()
        let group = "llmspool-it-\(UInt32.random(in: 0...UInt32.max) % 100_000)"
        try Harness.run("/usr/sbin/groupadd", [group])
        defer {
            harness.stop()
            _ = try? Harness.run("/usr/sbin/groupdel", [group])
        }
        // The other user must be able to reach the spool's folder.
        #expect(chmod(harness.root, 0o711) == 0)
        let spool = harness.root + "/shared"
        let initialized = try harness.cli(["init", spool, "--group", group])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let outgoing = try Syscall.lstat(spool + "/outgoing")
        #expect(outgoing.st_mode & 0o7777 == 0o3770, "setgid and sticky, writable by the group")
        let gid = try #require(getgrnam(group)).pointee.gr_gid
        #expect(outgoing.st_gid == gid)
        let batches = try Syscall.lstat(spool + "/state/batches")
        #expect(batches.st_gid == gid && batches.st_mode & 0o7777 == 0o2750, "state's own folders are the group's too")
        let memberStatus = try Harness.spawnAndWait(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--groups=\(gid)", Harness.binary,
                                                     "status", "--spool", spool])
        #expect(memberStatus.status == 0 && memberStatus.stdout.contains("queued 0"), "a member reads the spool: \(memberStatus.stderr)")
        let file = harness.root + "/request.json"
        try requestText("from another user").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(chmod(file, 0o644) == 0)
        // nobody, with the group as its only supplementary group.
        let asOther = try Harness.spawnAndWait(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--groups=\(gid)", Harness.binary,
                                                "submit", file, "--id", "theirs", "--spool", spool])
        #expect(asOther.status == 0, "\(asOther.stderr)")
        let dropped = try Syscall.lstat(spool + "/outgoing/theirs.json")
        #expect(dropped.st_uid == 65534)
        #expect(dropped.st_gid == gid, "the setgid folder gives the file the group")
        #expect(dropped.st_mode & 0o777 == 0o640, "readable by the daemon's group")
        let denied = try Harness.spawnAndWait(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Harness.binary,
                                               "submit", file, "--id", "outsider", "--spool", spool])
        #expect(denied.status != 0, "a user outside the group cannot submit")
        // Members manage nothing but their own files: a refusal says why and who may. Before,
        // `unlink …: Operation not permitted (errno 1)` and `mkdir …/hold: Permission denied`.
        let submitted = try harness.cli(["submit", file, "--id", "owners", "--spool", spool])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        func asMember(_ arguments: [String]) throws -> (status: Int32, stderr: String) {
            let finished = try Harness.spawnAndWait(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--groups=\(gid)", Harness.binary]
                                                    + arguments + ["--spool", spool])
            return (finished.status, finished.stderr)
        }
        let nobody = getpwuid(65534).map { "uid 65534 (\(String(cString: $0.pointee.pw_name)))" } ?? "uid 65534"
        let cancel = try asMember(["cancel", "owners"])
        #expect(cancel.status == 1)
        #expect(cancel.stderr.contains("cannot unlink \(spool)/outgoing/owners.json: Operation not permitted; \(spool)/outgoing has the sticky bit "
            + "and the file belongs to uid 0 (root): only its owner, the folder's owner (uid 0 (root)) or root may move or remove it, not \(nobody)"),
            "\(cancel.stderr)")
        #expect(Syscall.isPresent(spool + "/outgoing/owners.json"))
        let hold = try asMember(["hold", "owners"])
        #expect(hold.status == 1)
        #expect(hold.stderr.contains("Permission denied; \(nobody) may not change \(spool): run this as the user the daemon runs as "
            + "(the spool's owner, uid 0 (root)), or as root"), "\(hold.stderr)")
        let own = try asMember(["cancel", "theirs"])
        #expect(own.status == 0 && !Syscall.isPresent(spool + "/outgoing/theirs.json"), "a member cancels their own request: \(own.stderr)")
    }

    /// `status`, `queue` and `show` run by a user who may not read the spool's folders: an
    /// error that names the folder and who may read it. Before, an unreachable `outgoing` was
    /// said not to exist, and with only `state` unreadable `status` said "daemon: not running,
    /// queued 0" of a spool with work queued.
    @Test func aUserWhoMayNotReadTheSpoolIsToldSoNotShownAnEmptySpool() throws {
        guard Harness.isRoot, exists("/usr/bin/setpriv") else {
            print("skipped: needs root and setpriv to act as another user")
            return
        }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.drop("waiting", Harness.request("waiting"))
        #expect(chmod(harness.root, 0o711) == 0 && chmod(harness.layout.root, 0o711) == 0)
        func asNobody(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            let finished = try Harness.spawnAndWait(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Harness.binary]
                                                    + arguments + ["--spool", harness.layout.root])
            return (finished.status, finished.stdout, finished.stderr)
        }
        let nobody = getpwuid(65534).map { "uid 65534 (\(String(cString: $0.pointee.pw_name)))" } ?? "uid 65534"
        for command in [["status"], ["status", "--json"], ["queue"], ["show", "waiting"]] {
            let denied = try asNobody(command)
            #expect(denied.status != 0, "\(command): \(denied.stdout)")
            #expect(denied.stderr.contains("cannot read \(harness.layout.outgoing) as \(nobody): Permission denied"), "\(command): \(denied.stderr)")
            #expect(denied.stderr.contains("the spool's owner, uid 0 (root)"), "\(command): \(denied.stderr)")
            #expect(!denied.stderr.contains("does not exist"), "\(command): \(denied.stderr)")
        }
        // outgoing open to all, state not: the daemon's status and the records are in state.
        #expect(chmod(harness.layout.outgoing, 0o755) == 0)
        let stateDenied = try asNobody(["status"])
        #expect(stateDenied.status != 0 && !stateDenied.stdout.contains("not running"), "\(stateDenied.stdout)")
        #expect(stateDenied.stderr.contains("cannot read \(harness.layout.state) as \(nobody)"), "\(stateDenied.stderr)")
        // Every folder open to all: the same user reads the spool.
        for folder in [harness.layout.state, harness.layout.incoming, harness.layout.failed] { #expect(chmod(folder, 0o755) == 0) }
        // Read for batches' counts: unreadable, a running batch read as "not begun".
        if Syscall.isPresent(harness.layout.batches) {
            let batches = try asNobody(["status"])
            #expect(batches.status != 0 && batches.stderr.contains("cannot read \(harness.layout.batches)"), "\(batches.stderr)")
            #expect(chmod(harness.layout.batches, 0o755) == 0)
        }
        let allowed = try asNobody(["queue"])
        #expect(allowed.status == 0 && allowed.stdout.contains("waiting"), "\(allowed.stdout) \(allowed.stderr)")
    }

    /// A drop box other users may write but not read (1733): `submit` cannot open it to
    /// fsync it, but its request is in place. Before, it said it had failed with the file
    /// already renamed in, and a second submit sent the request twice.
    @Test func submitIntoAWriteOnlyDropBoxSucceeds() throws {
        guard Harness.isRoot, exists("/usr/bin/setpriv") else {
            print("skipped: needs root and setpriv to act as another user")
            return
        }
        let harness = try Harness()
        defer { harness.stop() }
        #expect(chmod(harness.root, 0o711) == 0 && chmod(harness.layout.root, 0o711) == 0 && chmod(harness.layout.outgoing, 0o1733) == 0)
        let file = harness.root + "/request.json"
        try requestText("into the drop box").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(chmod(file, 0o644) == 0)
        let submitted = try Harness.spawnAndWait(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Harness.binary,
                                                  "submit", file, "--id", "dropped", "--spool", harness.layout.root])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        #expect(harness.files(in: harness.layout.outgoing) == ["dropped.json"])
    }

    /// `run` and `check-config` refuse a config another user owns (it decides where the key
    /// is sent); `status` still finds the spool through it.
    @Test func theDaemonRefusesAConfigAnotherUserOwns() throws {
        guard Harness.isRoot else {
            print("skipped: needs root to give the config to another user")
            return
        }
        let harness = try Harness()
        defer { harness.stop() }
        let config = harness.root + "/theirs.json"
        try "{\"spool\": \"\(harness.layout.root)\"}".write(toFile: config, atomically: false, encoding: .utf8)
        #expect(chmod(config, 0o644) == 0 && chown(config, 65534, 65534) == 0)
        // Bounded: a `run` that took the file would otherwise run until killed.
        for command in [["check-config", "--config", config], ["run", "--config", config]] {
            let refused = try harness.cli(["/usr/bin/timeout", "-s", "KILL", "20", Harness.binary] + command, viaProgram: true)
            #expect(refused.status != 0 && refused.stderr.contains("config \(config) is owned by uid 65534"), "\(command): \(refused.stderr)")
        }
        let status = try harness.cli(["status", "--config", config])
        #expect(status.status == 0 && status.stdout.contains("queued 0"), "\(status.stdout) \(status.stderr)")
    }

    @Test func versionStreamsAndConfirmations() throws {
        let harness = try Harness()
        defer { harness.stop() }
        for command in ["--version", "run --version", "submit --version", "status --version", "queue --version", "stub --version"] {
            let finished = try harness.cli(command.split(separator: " ").map(String.init))
            #expect(finished.status == 0 && finished.stdout.hasPrefix("llmspool ") && finished.stdout.split(separator: "\n").count == 1,
                    "\(command): \(finished.stdout)")
        }
        // NDJSON: every line a whole object.
        let watched = try harness.cli(["/usr/bin/timeout", "-s", "KILL", "1", Harness.binary, "status", "--watch", "--json", "--interval", "0.1",
                                       "--spool", harness.layout.root], viaProgram: true)
        let lines = watched.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count >= 2 && lines.last == "", "\(watched.stdout)")
        for line in lines.dropLast() { #expect(JSONObject(String(line))?["queued"] as? Int == 0, "\(line)") }
        // The longest interval is accepted, not an overflow (the first object comes at once).
        let slow = try harness.cli(["/usr/bin/timeout", "-s", "KILL", "2", Harness.binary, "status", "--watch", "--json", "--interval", "86400",
                                    "--spool", harness.layout.root], viaProgram: true)
        #expect(slow.status == 137 && slow.stdout.split(separator: "\n").count == 1, "\(slow.status) \(slow.stderr)")

        try harness.drop("a", Harness.request("a"))
        try harness.drop("b", Harness.request("b"))
        let unconfirmed = try harness.cli(["cancel", "--all", "--spool", harness.layout.root], stdin: "")
        #expect(unconfirmed.status == 1 && unconfirmed.stderr.contains("nothing cancelled"), "\(unconfirmed.stderr)")
        #expect(harness.files(in: harness.layout.outgoing) == ["a.json", "b.json"])
        let declined = try harness.cli(["cancel", "--all", "--spool", harness.layout.root], stdin: "n\n")
        #expect(declined.status == 1)
        let confirmed = try harness.cli(["cancel", "--all", "--spool", harness.layout.root], stdin: "y\n")
        #expect(confirmed.stdout == "cancelled a\ncancelled b\n", "\(confirmed.stdout)")
        try harness.drop("c", Harness.request("c"))
        #expect(try harness.cli(["cancel", "--all", "--yes", "--spool", harness.layout.root]).stdout == "cancelled c\n")
    }

    @Test func ctrlCDuringSubmitWaitSaysTheRequestIsStillRunning() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let file = harness.root + "/request.json"
        try requestText("interrupted").write(toFile: file, atomically: true, encoding: .utf8)
        let errors = harness.root + "/submit.err"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        // No daemon: the request waits, and so does submit --wait, until Ctrl-C.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Harness.binary)
        process.arguments = ["submit", file, "--id", "interrupted", "--wait", "--spool", harness.layout.root]
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try waitUntil("the request is dropped and followed", timeout: 20) {
            ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").contains("interrupted\n")
        }
        kill(process.processIdentifier, SIGINT)
        try waitUntil("submit exits", timeout: 20) { !process.isRunning }
        process.waitUntilExit()
        #expect(process.terminationStatus == 130)
        let text = try String(contentsOfFile: errors, encoding: .utf8)
        #expect(text.contains("llmspool: interrupted is still running; `llmspool wait interrupted` to follow"), "\(text)")
        #expect(exists(harness.layout.request("interrupted")), "the request stays in the spool")
    }

    @Test func checkConfigWarnsAboutARemoteEndpointWithoutAKey() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let config = harness.root + "/remote.json"
        try #"{"spool": "\#(harness.layout.root)", "base_url": "https://api.openai.com/v1"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let checked = try harness.cli(["check-config", "--config", config])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stderr.contains("is remote and has no API key"), "\(checked.stderr)")
        #expect(!checked.stdout.contains("configuration OK"), "\(checked.stdout)")
        let keyed = try harness.cli(["check-config", "--config", config], environment: ["OPENAI_API_KEY": "sk-test"])
        #expect(keyed.stdout.contains("configuration OK") && keyed.stderr.isEmpty, "\(keyed.stdout)\(keyed.stderr)")
        try #"{"api_key": "sk-inline"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let inline = try harness.cli(["check-config", "--config", config])
        #expect(inline.status == 1 && inline.stderr.contains("keys are never accepted inline; use api_key_env"), "\(inline.stderr)")
    }

    /// A loopback port nobody listens on right now.
    func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}

extension Harness {
    /// Runs a program (not `llmspool` itself) with the environment `cli` gives `llmspool`.
    func cli(_ argv: [String], viaProgram: Bool, stdin: String = "") throws -> Finished {
        var merged = ProcessInfo.processInfo.environment
        merged["OPENAI_API_KEY"] = nil
        merged["LLMSPOOL_CONFIG"] = nil
        return try Harness.spawnAndWait(argv, stdin: stdin, environment: merged)
    }

    /// Starts `llmspool` after a shell command (such as `umask 077`), keeping its pid.
    static func spawnDaemonUnderShell(_ prelude: String, _ arguments: [String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(prelude) && exec \"$0\" \"$@\"", Harness.binary] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAI_API_KEY"] = nil
        environment.removeValue(forKey: "OPENAI_BASE_URL")
        process.environment = environment
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardError = handle
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }
}

/// `hold` and `release`, like postsuper -h and -H.
extension ClientCommandTests {
    /// `show` and `wait` take a name within the spool: `../x` read (or followed) a file
    /// outside it. Refused as a usage error, nothing read.
    @Test(arguments: ["show", "wait"]) func aPathIsNoRequestID(command: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        let secret = harness.root + "/outside.json"
        try DurableFile.write(Array(#"{"id":"outside","status":"failed","message":"SECRET"}"#.utf8), to: secret)
        for name in ["../outside", "../../x", "..", "a/b"] {
            let result = try harness.cli([command, name, "--spool", harness.layout.root])
            #expect(result.status == 2, "\(name): \(result.stderr)")
            #expect(result.stderr.contains("is not a request id or batch name") && !result.stdout.contains("SECRET"), "\(result.stdout)\(result.stderr)")
        }
    }
}

@Suite(.serialized) struct HoldCommandTests {
    /// `hold` and `retry` act on requests: named with a running batch's name,
    /// they say it is a batch and how to cancel it (before: "not in outgoing", beside the
    /// very file).
    @Test func commandsForRequestsNameABatchAsSuch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try BatchTests.dropBatch(harness, "nightly", [BatchTests.line("slow", stub: ["latency_ms": 30_000])])
        try waitUntil("the batch runs", timeout: 20) { try harness.arrivals(of: "prompt of slow").count == 1 }
        for command in ["hold", "retry"] {
            let answer = try harness.cli([command, "nightly", "--spool", harness.layout.root])
            #expect(answer.status != 0, "\(command)")
            #expect(answer.stderr.contains("is a batch file") && answer.stderr.contains("llmspool cancel nightly"), "\(command): \(answer.stderr)")
        }
        #expect(Syscall.isPresent(harness.layout.batchRequest("nightly")), "nothing moved")
    }

    @Test func aHeldRequestStaysUnsentUntilReleased() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.drop("kept", Harness.request("kept back"))
        let held = try harness.cli(["hold", "kept", "--spool", harness.layout.root])
        #expect(held.status == 0 && held.stdout == "held kept\n", "\(held.stdout)\(held.stderr)")
        #expect(try harness.cli(["hold", "kept", "--spool", harness.layout.root]).status == 1, "not in outgoing any more")
        try harness.startDaemon()
        // A request dropped later is answered: the daemon runs, and still sends nothing held.
        try harness.drop("other", Harness.request("not held"))
        try waitUntil("the other is done", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("other")) }
        #expect(try harness.arrivals(of: "kept back").isEmpty)
        #expect(JSONObject(try harness.cli(["show", "kept", "--spool", harness.layout.root]).stdout)?["state"] as? String == "held")
        #expect(JSONObject(try harness.cli(["status", "--json", "--spool", harness.layout.root]).stdout)?["held"] as? Int == 1)
        let queue = try harness.cli(["queue", "--spool", harness.layout.root])
        let listed = try harness.cli(["status", "--list", "--spool", harness.layout.root]).stdout
        #expect(listed.hasPrefix("ID  STATE  BYTES  AGE") && listed.contains("kept  held"), "status --list is queue: \(listed)")
        #expect(queue.stdout.contains("kept  held") && queue.stdout.contains("llmspool release kept"), "\(queue.stdout)")
        let released = try harness.cli(["release", "kept", "--spool", harness.layout.root])
        #expect(released.stdout == "released kept\n", "\(released.stderr)")
        try waitUntil("the released one is done", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("kept")) }
        #expect(try harness.arrivals(of: "kept back").count == 1)
    }
}

/// Without a daemon, `queue` says what intake will do with a file that is no request: a
/// FIFO or a folder under a request's name is refused when read, never sent.
@Suite(.serialized) struct QueueOfFilesNeverSentTests {
    @Test func aFIFOAndAFolderAreListedAsRefusedNotQueued() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try #require(mkfifo("\(harness.layout.outgoing)/pipe.json", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: "\(harness.layout.outgoing)/folder.json", withIntermediateDirectories: false)
        try harness.drop("plain", Harness.request("an ordinary request"))
        let queue = try harness.cli(["queue", "--spool", harness.layout.root]).stdout
        let lines = queue.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("pipe  queued") && $0.contains("refused when read: the request is a FIFO") }, "\(queue)")
        #expect(lines.contains { $0.hasPrefix("folder  queued") && $0.contains("refused when read: the request is a folder") }, "\(queue)")
        #expect(lines.contains { $0.hasPrefix("plain  queued") && $0.hasSuffix("no daemon running") && !$0.contains("refused") }, "\(queue)")
    }
}

/// A provider's error text is printed to a terminal with its control characters escaped:
/// an escape sequence in it must not reach the user's terminal raw.
@Suite(.serialized) struct FollowedFailureTextTests {
    @Test func aFailuresMessageIsPrintedEscaped() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let record: [String: Any] = ["id": "painted", "status": "failed", "kind": "http",
                                     "message": "the endpoint answered HTTP 400: \u{1B}[31mred\u{1B}[0m\nforged line"]
        try JSONSerialization.data(withJSONObject: record).write(to: URL(fileURLWithPath: harness.layout.errorRecord("painted")))
        let waited = try harness.cli(["wait", "painted", "--spool", harness.layout.root, "--timeout", "10"])
        #expect(waited.status == 1, "\(waited.stderr)")
        #expect(!waited.stderr.contains("\u{1B}"), "no escape character reaches the terminal: \(waited.stderr.debugDescription)")
        #expect(waited.stderr.contains(#"\x1b[31mred\x1b[0m\x0aforged line"#), "\(waited.stderr.debugDescription)")
    }
}
