import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Synchronization
import Testing

/// Real network filesystems made by `Tests/netfs/netfs.sh`: a GlusterFS volume with its
/// default client caches, and sshfs, each mounted four times on loopback inside a private
/// network namespace. Torn down by `down()`, which every test defers.
final class NetworkMounts: @unchecked Sendable {
    // @unchecked Sendable holds because one test owns it and calls it from one task.

    /// Which filesystem a test runs on.
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case glusterfs, sshfs
        var testDescription: String { rawValue }
    }

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("netfs/netfs.sh").path
    }

    /// Why these tests cannot run here, or nil when they can.
    static var missing: String? {
        if getuid() != 0 { return "needs root" }
        if !FileManager.default.fileExists(atPath: "/dev/fuse") { return "needs /dev/fuse" }
        for program in ["/usr/sbin/glusterd", "/usr/sbin/gluster", "/usr/sbin/sshd", "/usr/bin/sshfs", "/usr/bin/nsenter", "/usr/bin/ssh-keygen"]
        where !FileManager.default.isExecutableFile(atPath: program) {
            return "needs \(program) (bash .ci/deps --test)"
        }
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") && !FileManager.default.isExecutableFile(atPath: "/bin/ip") {
            return "needs ip (iproute2)"
        }
        return nil
    }

    static var canRun: Bool { missing == nil }

    let directory: String
    let mounts: [Kind: [String]]

    init() throws {
        directory = NSTemporaryDirectory() + "llmspool-netfs-\(UUID().uuidString)"
        let finished = try Harness.spawnAndWait(["/bin/bash", NetworkMounts.script, "up", directory, "4", "4"])
        guard finished.status == 0 else {
            _ = try? Harness.spawnAndWait(["/bin/bash", NetworkMounts.script, "down", directory])
            try? FileManager.default.removeItem(atPath: directory)
            throw HarnessError("netfs.sh up failed (\(finished.status)): \(finished.stderr)")
        }
        var found: [Kind: [String]] = [:]
        for line in finished.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let paths = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).split(separator: " ").map(String.init)
            if parts[0] == "NETFS_GLUSTER" { found[.glusterfs] = paths }
            if parts[0] == "NETFS_SSHFS" { found[.sshfs] = paths }
        }
        mounts = found
        guard found[.glusterfs]?.count == 4, found[.sshfs]?.count == 4 else {
            down()
            throw HarnessError("netfs.sh up printed no mounts: \(finished.stdout)")
        }
    }

    /// The spool as mount `index` (0...3) of `kind` sees it.
    func spool(_ kind: Kind, _ index: Int) -> SpoolLayout {
        SpoolLayout(root: mounts[kind]![index] + "/spool")
    }

    /// The spool as the server stores it (the GlusterFS brick, the directory sshd exports):
    /// what every client sees once its caches have expired.
    func server(_ kind: Kind) -> SpoolLayout {
        SpoolLayout(root: directory + (kind == .glusterfs ? "/gluster/brick" : "/sshfs/export") + "/spool")
    }

    /// Mount `index` of `kind` unmounted lazily and mounted again, as an operator does with
    /// a hung or dropped network mount: a new device number for the same folder.
    func remount(_ kind: Kind, _ index: Int) throws {
        let finished = try Harness.spawnAndWait(["/bin/bash", NetworkMounts.script, "remount", directory,
                                                 kind == .glusterfs ? "gluster" : "sshfs", "\(index + 1)"])
        guard finished.status == 0 else { throw HarnessError("netfs.sh remount failed (\(finished.status)): \(finished.stderr)") }
    }

    func down() {
        _ = try? Harness.spawnAndWait(["/bin/bash", NetworkMounts.script, "down", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Several daemons on one spool over a real network filesystem: exactly once, with
/// GlusterFS's default client caches and on sshfs, through kills and stale caches.
@Suite(.serialized, .enabled(if: NetworkMounts.canRun, "\(NetworkMounts.missing ?? "")"))
struct NetworkSpoolTests {
    // 10 s leases: a round of renewals is a few round trips per held lease, and on a mount
    // shared with three daemons and a producer on two busy cores it was seen to take over
    // 4 s, past a 3 s lease (the daemon warns when a round takes over a third of it).

    /// Each daemon posts under a path of its own (`/<name>/v1/...`), so the stub's record
    /// says who sent what.
    static func config(_ host: String, spool: SpoolLayout, harness: Harness, name: String? = nil) -> [String: Any] {
        // `auto`: the daemons must find out by themselves that these are network mounts.
        ["spool": spool.root, "watch_mode": "auto", "poll_interval_seconds": 0.2, "lease_seconds": 10, "host_id": host, "concurrency": 16,
         "rescan_interval_seconds": 5, "log_level": "debug", "base_url": Self.url(harness, of: name ?? host)]
    }

    static func url(_ harness: Harness, of daemon: String) -> String {
        guard let range = harness.stubURL.range(of: "/v1", options: .backwards) else { return harness.stubURL }
        return harness.stubURL.replacingCharacters(in: range, with: "/\(daemon)/v1")
    }

    /// The prompts one daemon's posts carried, as the stub received them.
    static func prompts(sentBy daemon: String, _ harness: Harness) throws -> Set<String> {
        Set(try harness.stubArrivalPaths().filter { $0.path.hasPrefix("/\(daemon)/") }.map(\.prompt))
    }

    /// A producer on another machine: a dot-file through its own mount, then a rename.
    static func drop(_ layout: SpoolLayout, _ id: String, _ request: [String: Any]) throws {
        let hidden = "\(layout.outgoing)/.\(id).json.tmp"
        try DurableFile.write(Array(try JSONSerialization.data(withJSONObject: request)), to: hidden, syncDirectory: false)
        try Syscall.rename(hidden, layout.request(id))
    }

    static func request(_ index: Int, prefix: String, streamEvery: Int = 2, stub: [String: Any] = ["latency_ms": 20]) -> [String: Any] {
        Harness.request("\(prefix) \(index)", stream: index % streamEvery == 0, stub: stub)
    }

    /// Ids each daemon logged as done, counted.
    static func doneIDs(_ logs: [String]) -> [String: Int] {
        idCounts(logs) { $0.contains("info: done ") || $0.contains("info: done (completed after a restart)") }
    }

    /// The ids reported cancelled, each with how many times.
    static func cancelledIDs(_ logs: [String]) -> [String: Int] {
        idCounts(logs) { $0.contains("info: cancelled: ") }
    }

    /// How many of the lines `matches` takes name each id (` id=<id>`).
    static func idCounts(_ logs: [String], _ matches: (Substring) -> Bool) -> [String: Int] {
        var counts: [String: Int] = [:]
        for log in logs {
            for line in log.split(separator: "\n") where matches(line) {
                guard let range = line.range(of: " id=") else { continue }
                let id = line[range.upperBound...].prefix { $0 != " " }
                counts[String(id), default: 0] += 1
            }
        }
        return counts
    }

    /// Starts a daemon on mount `index` of `kind` for each name, in order, each with
    /// `extra` over the tests' config.
    static func startDaemons(_ names: [String], _ kind: NetworkMounts.Kind, _ mounts: NetworkMounts, _ harness: Harness,
                             extra: [String: Any] = [:]) throws -> [Process] {
        try names.enumerated().map { index, name in
            var config = config(name, spool: mounts.spool(kind, index), harness: harness)
            config.merge(extra) { $1 }
            return try harness.startExtraDaemon(name, config: config)
        }
    }

    /// The log lines about `ids`, each prefixed with its log's index, to explain a failure.
    static func linesAbout(_ ids: some Sequence<String>, in logs: [String]) -> String {
        var lines: [String] = []
        for id in ids {
            for (index, log) in logs.enumerated() {
                for line in log.split(separator: "\n") where line.contains(" id=\(id) ") || line.hasSuffix(" id=\(id)") {
                    lines.append("[\(index)] \(line)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Files a finished run must not leave anywhere in the spool: claims, partial answers,
    /// hidden temporaries, and what FUSE makes of files removed while open.
    static func leftovers(_ layout: SpoolLayout) -> [String] {
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: layout.root)
        while let relative = enumerator?.nextObject() as? String {
            let name = (relative as NSString).lastPathComponent
            if name.hasSuffix(".lease") || name.hasSuffix(".takeover") || name.hasSuffix(SpoolLayout.partialSuffix)
                || name.hasPrefix(".fuse_hidden") || (name.hasPrefix(".") && name.hasSuffix(SpoolLayout.temporarySuffix)) {
                found.append(relative)
            }
        }
        return found.sorted()
    }

    /// Stops each daemon with SIGTERM and waits for it.
    static func stopAll(_ processes: [Process]) {
        for process in processes where process.isRunning { process.terminate() }
        for process in processes { process.waitUntilExit() }
    }

    /// Every request reached the endpoint once, ended done once, left its result and nothing else.
    func expectExactlyOnce(_ harness: Harness, _ layout: SpoolLayout, server: SpoolLayout, ids: [String], prompt: (String) -> String, logs: [String],
                           sentTwiceAllowed: Set<String> = [], heldOpenByOthers: Bool = false,
                           killLeftovers: Bool = false) throws {
        // sshfs keeps a request removed while another program had it open on the same
        // mount as `outgoing/.fuse_hidden*`: such a program's leftover, not the daemon's.
        let othersLeftover: (String) -> Bool = { heldOpenByOthers && $0.hasPrefix("outgoing/.fuse_hidden") }
        for (index, log) in logs.enumerated() {
            let slow = log.components(separatedBy: "renewing the leases took longer").count - 1
            let lost = log.components(separatedBy: "lease lost to another daemon").count - 1
            if slow + lost > 0 { print("daemon \(index): \(slow) slow renewal warnings, \(lost) leases lost") }
        }
        let arrivals = try harness.stubArrivals()
        var perPrompt: [String: Int] = [:]
        for arrival in arrivals { perPrompt[arrival.prompt, default: 0] += 1 }
        let repeated = ids.filter { perPrompt[prompt($0), default: 0] > 1 }
        let unexpected = repeated.filter { !sentTwiceAllowed.contains($0) }
        #expect(unexpected.isEmpty, "sent more than once: \(unexpected.prefix(20)) (\(unexpected.count))")
        #expect(ids.allSatisfy { perPrompt[prompt($0), default: 0] >= 1 }, "every request reached the endpoint")
        let thrice = ids.filter { perPrompt[prompt($0), default: 0] > 2 }
        if !thrice.isEmpty { print("sent three times or more:\n\(Self.linesAbout(thrice.prefix(2), in: logs))") }
        #expect(thrice.isEmpty, "at most once more each: \(thrice) \(Self.linesAbout(thrice.prefix(2), in: logs))")
        let done = Self.doneIDs(logs)
        let doneTwice = ids.filter { done[$0, default: 0] > 1 }
        #expect(doneTwice.isEmpty, "ended done more than once: \(doneTwice.prefix(20)) (\(doneTwice.count)) \(Self.linesAbout(doneTwice.prefix(2), in: logs))")
        // Nobody withdraws a request here: a request seen leaving because another daemon
        // ended it must not be reported cancelled besides.
        let reportedCancelled = Self.cancelledIDs(logs)
        let cancelled = ids.filter { reportedCancelled[$0] != nil }
        #expect(cancelled.isEmpty, "reported cancelled: \(cancelled.prefix(20)) \(Self.linesAbout(cancelled.prefix(2), in: logs))")
        // A daemon killed between publishing and logging leaves a result without its line.
        let unlogged = ids.filter { done[$0, default: 0] == 0 && !sentTwiceAllowed.contains($0) }
        #expect(unlogged.isEmpty, "every request ended done once: \(unlogged.prefix(20))")
        #expect(harness.files(in: layout.failed).isEmpty, "nothing failed: \(harness.files(in: layout.failed).prefix(10))")
        let stillOutgoing = harness.files(in: layout.outgoing).filter { !othersLeftover("outgoing/" + $0) }
        let outgoingReport = "\(stillOutgoing.prefix(10)) \(Self.linesAbout(stillOutgoing.prefix(1).map { ($0 as NSString).deletingPathExtension }, in: logs))"
        #expect(stillOutgoing.isEmpty, "left in outgoing: \(outgoingReport)")
        var notDone: [String] = []
        for id in ids {
            // The server's copy is the record as written; a client's view of it can lag by its
            // cache timeouts, which is the filesystem's behaviour and is reported, not judged.
            let stored = Self.status(of: server.taskRecord(id))
            if stored != "done" {
                notDone.append("\(id): \(stored) (through the mount: \(Self.status(of: layout.taskRecord(id))); \(Self.linesAbout([id], in: logs)))")
            }
        }
        #expect(notDone.isEmpty, "every task record says done: \(notDone.prefix(20))")
        for id in ids.enumerated().filter({ $0.offset % 50 == 0 }).map(\.element) {
            #expect(Harness.content(of: try harness.json(layout.result(id))) == StubAnswer.content(prompt: prompt(id), tokens: 8))
        }
        let left = Self.leftovers(layout).filter { !othersLeftover($0) }
        let report = "left behind: \(left.prefix(20)) (\(left.count)) \(Self.linesAbout(left.prefix(2).map { (($0 as NSString).lastPathComponent as NSString).deletingPathExtension }, in: logs))"
        if killLeftovers {
            // Known, intermittent: after a SIGKILL, a killed daemon's half-written roster
            // temporary, or one lease, can outlive the run (seen 1 run in 3). Recorded, not hidden.
            withKnownIssue("a killed daemon's roster temporary or a lease can be left behind", isIntermittent: true) {
                #expect(left.isEmpty, "\(report)")
            }
        } else {
            #expect(left.isEmpty, "\(report)")
        }
    }

    /// A task record's status, or what kept it from being read.
    static func status(of path: String) -> String {
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return "not a JSON object" }
            return object["status"] as? String ?? "no status"
        } catch {
            return "unreadable: \(error.localizedDescription)"
        }
    }

    /// Waits until no claim is left in `state/leases`: finished ids keep theirs a while.
    func waitForLeasesToClear(_ layout: SpoolLayout, timeout: Double = 30) {
        try? waitUntil("the leases are gone", timeout: timeout) { Self.leftovers(layout).isEmpty }
    }

    @Test(arguments: NetworkMounts.Kind.allCases)
    func threeDaemonsAnswerEachRequestExactlyOnce(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [Process] = []
        defer {
            Self.stopAll(daemons)
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let producer = mounts.spool(kind, 3)
        try producer.create()
        let names = ["d1", "d2", "d3"]
        daemons += try Self.startDaemons(names, kind, mounts, harness)
        #expect(harness.extraLog("d1").contains("watching by polling"), "auto polls a network mount")
        let count = Int(ProcessInfo.processInfo.environment["LLMSPOOL_NETFS_REQUESTS"] ?? "") ?? 1000
        let ids = (0..<count).map { "n\($0)" }
        let started = Date()
        var droppedAt: [String: Double] = [:]
        for (index, id) in ids.enumerated() {
            try Self.drop(producer, id, Self.request(index, prefix: "\(kind) net"))
            droppedAt["\(kind) net \(index)"] = Date().timeIntervalSince1970
        }
        let dropped = Date()
        // `status` through the producer's mount lists every live daemon, not only the last writer.
        let status = try harness.cli(["status", "--json", "--spool", producer.root])
        let listed = (try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["daemons"] as? [[String: Any]]
        // Under load a daemon's entry, rewritten each second, can be seen stale through another mount.
        withKnownIssue("a roster entry read stale through a loaded GlusterFS mount", isIntermittent: true) {
            #expect(Set((listed ?? []).compactMap { $0["host"] as? String }) == Set(names), "status shows every daemon: \(status.stdout.prefix(300))")
        }
        try waitUntil("every request is answered", timeout: 600) {
            harness.files(in: producer.incoming).filter { $0.hasSuffix(".json") }.count >= count
        }
        let answered = Date()
        Self.stopAll(daemons)
        // Pickup: from the rename through the producer's mount to the arrival at the stub.
        let pickup = try harness.stubArrivals().compactMap { arrival in droppedAt[arrival.prompt].map { arrival.at - $0 } }.sorted()
        let quantile = { (q: Double) in pickup.isEmpty ? 0 : pickup[min(pickup.count - 1, Int(Double(pickup.count) * q))] }
        let logs = names.map { harness.extraLog($0) }
        let shares = names.map { name in Self.doneIDs([harness.extraLog(name)]).count }
        print("\(kind): \(count) requests through 3 daemons in \(String(format: "%.1f", answered.timeIntervalSince(started))) s "
              + "(dropping took \(String(format: "%.1f", dropped.timeIntervalSince(started))) s), results per daemon \(shares), "
              + "pickup median \(String(format: "%.2f", quantile(0.5))) s, 95th \(String(format: "%.2f", quantile(0.95))) s, max \(String(format: "%.2f", quantile(1))) s")
        try expectExactlyOnce(harness, producer, server: mounts.server(kind), ids: ids, prompt: { "\(kind) net \($0.dropFirst())" }, logs: logs)
        #expect(shares.allSatisfy { $0 > 0 }, "the load is spread: \(shares)")
    }

    /// A producer on another mount saves a request again, in place as an editor does, while
    /// its answer is on its way: the last save is answered. Through the daemon's mount a
    /// replaced file shows its old attributes (and on GlusterFS its old pages) for about a
    /// second, and sshfs keeps one inode number per path, so the request is read afresh,
    /// past the page cache, before it is removed. Before, 4 to 11 of 20 such saves were
    /// removed unanswered, the old save's answer left as the result.
    @Test(arguments: NetworkMounts.Kind.allCases)
    func aRequestSavedAgainFromAnotherMountWhileItsAnswerComesIsAnsweredAsSaved(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [Process] = []
        defer {
            Self.stopAll(daemons)
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let producer = mounts.spool(kind, 3)
        try producer.create()
        daemons += try Self.startDaemons(["d1"], kind, mounts, harness)
        let ids = (0..<12).map { "again\($0)" }
        for id in ids {
            try Self.drop(producer, id, Harness.request("old \(id)", stub: ["latency_ms": 400]))
            try waitUntil("\(id) is sent", timeout: 20) { harness.extraLog("d1").contains("upload started id=\(id) ") }
            let saved = try JSONSerialization.data(withJSONObject: Harness.request("new \(id)", stub: ["latency_ms": 400]))
            let file = try FileDescriptor.open(producer.request(id), O_WRONLY | O_TRUNC | O_NOFOLLOW)
            try file.writeAll(Array(saved))
        }
        try waitUntil("every id is answered and has left outgoing", timeout: 60) {
            ids.allSatisfy { Syscall.isPresent(producer.result($0)) && !Syscall.isPresent(producer.request($0)) }
        }
        let stale = try ids.filter { Harness.content(of: try harness.json(producer.result($0)))?.hasPrefix("Echo: new \($0)") != true }
        #expect(stale.isEmpty, "answered with an earlier save: \(stale)\n\(Self.linesAbout(stale, in: [harness.extraLog("d1")]))")
    }

    @Test(arguments: NetworkMounts.Kind.allCases)
    func aDaemonKilledAndRestartedSendsOnlyItsOwnRequestsAgain(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [Process] = []
        defer {
            Self.stopAll(daemons)
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let producer = mounts.spool(kind, 3)
        try producer.create()
        let victim = try harness.startExtraDaemon("d1", config: Self.config("d1", spool: mounts.spool(kind, 0), harness: harness))
        daemons.append(victim)
        daemons.append(try harness.startExtraDaemon("d2", config: Self.config("d2", spool: mounts.spool(kind, 1), harness: harness)))
        daemons.append(try harness.startExtraDaemon("d3", config: Self.config("d3", spool: mounts.spool(kind, 2), harness: harness)))
        let count = 300
        let ids = (0..<count).map { "k\($0)" }
        for (index, id) in ids.enumerated() {
            try Self.drop(producer, id, Self.request(index, prefix: "\(kind) kill", stub: ["tokens": 8, "token_delay_ms": 150]))
        }
        try waitUntil("d1 is sending some of them", timeout: 60) {
            harness.extraLog("d1").components(separatedBy: "upload started").count > 4
        }
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        let killedAt = Date()
        // What d1 had in flight: what the stub received from it, less what it ended. Its log
        // cannot say: a post can leave before its "upload started" line is written.
        let victimLog = harness.extraLog("d1")
        let sentByVictim = try Self.prompts(sentBy: "d1", harness)
        var inFlight = Set(ids.filter { sentByVictim.contains("\(kind) kill \($0.dropFirst())") })
        inFlight.subtract(Self.doneIDs([victimLog]).keys)
        // The others take over first (at once with locks, after the lease time without);
        // then d1 comes back while the run goes on.
        try waitUntil("d1's requests are answered by the others", timeout: 120) {
            inFlight.allSatisfy { Syscall.isPresent(producer.result($0)) }
        }
        let takeover = Date().timeIntervalSince(killedAt)
        daemons.append(try harness.startExtraDaemon("d1-again", config: Self.config("d1", spool: mounts.spool(kind, 0), harness: harness, name: "d1-again")))
        try waitUntil("every request is answered", timeout: 300) {
            harness.files(in: producer.incoming).filter { $0.hasSuffix(".json") }.count >= count
        }
        Self.stopAll(daemons)
        let restartLog = harness.extraLog("d1-again")
        print("\(kind): d1 killed with \(inFlight.count) in flight; they were done \(String(format: "%.1f", takeover)) s after the kill; "
              + "restart removed: \(restartLog.split(separator: "\n").filter { $0.contains("leftovers") })")
        // d1's killed attempts were cut short: their ids may count twice at the stub, nobody else's.
        try expectExactlyOnce(harness, producer, server: mounts.server(kind), ids: ids, prompt: { "\(kind) kill \($0.dropFirst())" },
                              logs: ["d1", "d2", "d3", "d1-again"].map { harness.extraLog($0) }, sentTwiceAllowed: inFlight,
                              killLeftovers: true)
    }

    /// A request another mount has just read (so its client caches hold it) is deleted by
    /// the daemon that answered it; the daemons on the caching mounts must not send it again.
    @Test(arguments: NetworkMounts.Kind.allCases)
    func aRequestCachedByAnotherMountIsNotSentAgain(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [Process] = []
        defer {
            Self.stopAll(daemons)
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let producer = mounts.spool(kind, 3)
        try producer.create()
        let count = 200
        let ids = (0..<count).map { "c\($0)" }
        // Keep mounts 2 and 3 reading every request, so their caches stay warm while
        // the daemon on mount 1 answers and deletes them.
        let cached = [mounts.spool(kind, 1), mounts.spool(kind, 2)]
        let stopReading = StopFlag()
        let readerDone = DispatchSemaphore(value: 0)
        let reader = Thread {
            while !stopReading.isSet {
                for layout in cached {
                    for id in ids { _ = RequestFile.read(path: layout.request(id), limit: 1 << 20) }
                }
            }
            readerDone.signal()
        }
        reader.start()
        defer {
            stopReading.set()
            readerDone.wait()
        }
        for (index, id) in ids.enumerated() { try Self.drop(producer, id, Self.request(index, prefix: "\(kind) cached")) }
        // The answering daemon first, alone, then the two on the caching mounts once it is busy.
        daemons.append(try harness.startExtraDaemon("d1", config: Self.config("d1", spool: mounts.spool(kind, 0), harness: harness)))
        try waitUntil("d1 answered some", timeout: 60) { Self.doneIDs([harness.extraLog("d1")]).count > 5 }
        daemons.append(try harness.startExtraDaemon("d2", config: Self.config("d2", spool: cached[0], harness: harness)))
        daemons.append(try harness.startExtraDaemon("d3", config: Self.config("d3", spool: cached[1], harness: harness)))
        try waitUntil("every request is answered", timeout: 300) {
            harness.files(in: producer.incoming).filter { $0.hasSuffix(".json") }.count >= count
        }
        // One more, answered while the others keep reading it: a claim through a caching
        // mount the moment its answer appears must fail too.
        try Self.drop(producer, "late", Harness.request("\(kind) cached late"))
        for layout in cached { _ = RequestFile.read(path: layout.request("late"), limit: 1 << 20) }
        try waitUntil("the late request is answered", timeout: 60) { Syscall.isPresent(producer.result("late")) }
        let lateClaimer = LeaseManager(layout: cached[0], hostID: "late", seconds: 3, logger: Logger(minimum: .error))
        let lateClaim = lateClaimer.claim("late")
        if lateClaim == .claimed { lateClaimer.release("late", ended: false) }
        stopReading.set()
        Self.stopAll(daemons)
        #expect(lateClaim != .claimed, "a finished request cannot be claimed again through a caching mount")
        waitForLeasesToClear(producer)
        try expectExactlyOnce(harness, producer, server: mounts.server(kind), ids: ids + ["late"], prompt: { $0 == "late" ? "\(kind) cached late" : "\(kind) cached \($0.dropFirst())" },
                              logs: ["d1", "d2", "d3"].map { harness.extraLog($0) }, heldOpenByOthers: true)
    }

    /// A producer deletes requests through its own mount while three daemons hold them
    /// queued or in flight: each deleted request a daemon had seen ends exactly once,
    /// cancelled (by the one daemon that claims its end) or done when its answer won the
    /// race; one deleted before any daemon read it has no outcome and leaves nothing; every
    /// other request is done once and never reported cancelled.
    @Test(arguments: NetworkMounts.Kind.allCases)
    func requestsDeletedWhileQueuedEndOnceEach(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [Process] = []
        defer {
            Self.stopAll(daemons)
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let producer = mounts.spool(kind, 3)
        try producer.create()
        daemons += try Self.startDaemons(["d1", "d2", "d3"], kind, mounts, harness, extra: ["concurrency": 4])
        let count = 120
        let ids = (0..<count).map { "w\($0)" }
        for (index, id) in ids.enumerated() {
            try Self.drop(producer, id, Self.request(index, prefix: "\(kind) withdrawn", stub: ["tokens": 8, "token_delay_ms": 100]))
        }
        try waitUntil("the daemons are sending", timeout: 60) {
            ["d1", "d2", "d3"].contains { harness.extraLog($0).contains("upload started") }
        }
        // Every third request, the last ones first: most are still queued, some in flight.
        let deleted = Set(ids.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
        for id in ids.reversed() where deleted.contains(id) { try Syscall.unlinkIfPresent(producer.request(id)) }
        let kept = ids.filter { !deleted.contains($0) }
        let logs = { ["d1", "d2", "d3"].map { harness.extraLog($0) } }
        // The daemons log every request they read (`validated`, at level debug).
        func seen(_ id: String, _ now: [String]) -> Bool { !Self.linesAbout([id], in: now).isEmpty }
        func unended(_ now: [String]) -> [String] {
            let done = Self.doneIDs(now)
            let gone = Self.cancelledIDs(now)
            return kept.filter { done[$0] == nil } + deleted.filter { done[$0] == nil && gone[$0] == nil && seen($0, now) }.sorted()
        }
        do {
            try waitUntil("every request has ended", timeout: 120) { unended(logs()).isEmpty }
        } catch {
            let missing = unended(logs())
            Issue.record("\(missing.count) without an outcome: \(missing.prefix(10)) \(Self.linesAbout(missing.prefix(2), in: logs()))")
        }
        // Time for a late second report to show.
        Thread.sleep(forTimeInterval: 3)
        Self.stopAll(daemons)
        let final = logs()
        let done = Self.doneIDs(final)
        let gone = Self.cancelledIDs(final)
        let unseen = deleted.filter { !seen($0, final) }
        let twice = ids.filter { done[$0, default: 0] + gone[$0, default: 0] != (unseen.contains($0) ? 0 : 1) }
        #expect(twice.isEmpty, "one outcome each: \(twice.prefix(10)) \(Self.linesAbout(twice.prefix(2), in: final))")
        for id in unseen {
            #expect(!Syscall.isPresent(mounts.server(kind).taskRecord(id)) && !Syscall.isPresent(mounts.server(kind).result(id)),
                    "\(id), deleted before any daemon read it, leaves nothing")
        }
        let keptCancelled = kept.filter { gone[$0] != nil }
        #expect(keptCancelled.isEmpty, "a request nobody deleted is never cancelled: \(keptCancelled.prefix(10))")
        let cancelledWithResult = deleted.filter { gone[$0] != nil && Syscall.isPresent(mounts.server(kind).result($0)) }
        #expect(cancelledWithResult.isEmpty, "a cancelled request has no result: \(cancelledWithResult.prefix(10))")
        #expect(harness.files(in: mounts.server(kind).outgoing).isEmpty, "outgoing is empty")
        #expect(harness.files(in: mounts.server(kind).failed).isEmpty, "nothing failed")
        let answered = deleted.filter { done[$0] != nil }.count
        let withdrawn = deleted.filter { gone[$0] != nil }.count
        print("\(kind): \(deleted.count) deleted: \(withdrawn) cancelled, \(answered) answered before their deletion took, "
              + "\(unseen.count) deleted before any daemon read them")
        #expect(withdrawn > 0, "some deletions found their request queued or in flight")
    }

    /// A share mounted again (a dropped mount, an autofs expiry) is the same folder under a
    /// new device number. The daemon knows the spool by its id (`state/.spool-id`) and
    /// carries on; before, it held the spool, answering nothing, until a restart.
    @Test(arguments: NetworkMounts.Kind.allCases)
    func aShareMountedAgainIsTheSameSpool(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        defer { mounts.down() }
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let layout = mounts.spool(kind, 0)
        let daemon = try harness.startExtraDaemon("d1", config: Self.config("d1", spool: layout, harness: harness))
        defer { Self.stopAll([daemon]) }
        let answered = { (prefix: String) in (0..<3).allSatisfy { FileManager.default.fileExists(atPath: layout.result("\(prefix)-\($0)")) } }
        for index in 0..<3 { try Self.drop(layout, "before-\(index)", Self.request(index, prefix: "before")) }
        try waitUntil("the requests before the remount are answered", timeout: 60) { answered("before") }
        let device = try Syscall.statFollowingLinks(layout.root).st_dev
        try mounts.remount(kind, 0)
        #expect(try Syscall.statFollowingLinks(layout.root).st_dev != device, "the share has a new device number")
        for index in 0..<3 { try Self.drop(layout, "after-\(index)", Self.request(index, prefix: "after")) }
        do {
            try waitUntil("the requests after the remount are answered", timeout: 60) { answered("after") }
        } catch {
            throw HarnessError("\(error); daemon log:\n\(harness.extraLog("d1").split(separator: "\n").suffix(40).joined(separator: "\n"))")
        }
        // Said by the status thread once it holds the new mount's locks.
        try waitUntil("the move is logged", timeout: 10) { harness.extraLog("d1").contains("the spool's filesystem was mounted again") }
        let arrivals = try harness.stubArrivalPaths().map(\.prompt)
        for index in 0..<3 {
            #expect(arrivals.filter { $0 == "after \(index)" }.count == 1, "after \(index) sent once")
        }
        #expect(daemon.isRunning, "the daemon carried on")
    }

    /// The probes every start makes (extended attributes in `incoming`, locks in
    /// `state/leases`) and the disk-health probe create a file and remove it. Closed and then
    /// removed, one in five was left on sshfs as `.fuse_hidden*`: the close's release reached
    /// sshfs after the unlink, which hid the file as still open, and nothing removed it. It
    /// was the `.fuse_hidden*` of `incoming` (empty, from each daemon's start) that the
    /// takeover and kill tests found. Removed while open, none is left.
    @Test func theProbesLeaveNothingBehindOnSSHFS() throws {
        let mounts = try NetworkMounts()
        defer { mounts.down() }
        let layout = mounts.spool(.sshfs, 0)
        try layout.create()
        let leases = LeaseManager(layout: layout, hostID: "probe", seconds: 10, logger: Logger(minimum: .error))
        let rounds = 60
        for _ in 0..<rounds {
            if case .failed(let reason) = ResultMarkProbe.run(layout) { Issue.record("the attribute probe failed: \(reason)") }
            #expect(layout.probeWritable() == nil)
            _ = leases.chooseMethod()
        }
        let hidden = { Self.leftovers(mounts.server(.sshfs)).filter { ($0 as NSString).lastPathComponent.hasPrefix(".fuse_hidden") } }
        // A file removed while open is hidden until the close's release deletes it, a moment
        // later; one left by the race stays.
        try? waitUntil("no .fuse_hidden is left", timeout: 5) { hidden().isEmpty }
        let left = hidden()
        #expect(left.isEmpty, "\(left.count) left after \(rounds) rounds of the probes: \(left.prefix(5))")
    }

    /// Two daemons, on mounts 0 and 1 of `kind`, and a batch of `lines` lines (`<kind>-<n>`,
    /// 120 ms each) dropped through mount 2 as `name`; returns, once the output has grown
    /// past 30 kB on the server, the daemon that runs it and the other.
    static func runSharedBatch(_ name: String, lines count: Int, _ kind: NetworkMounts.Kind, _ mounts: NetworkMounts, _ harness: Harness,
                               daemons: inout [String: Process], environment: [String: String] = [:]) throws -> (owner: String, other: String) {
        let producer = mounts.spool(kind, 2)
        try producer.create()
        for (index, daemon) in ["d1", "d2"].enumerated() {
            // One claim to renew, not hundreds: a shorter lease holds, and keeps the takeover
            // without locks (sshfs) short.
            var config = Self.config(daemon, spool: mounts.spool(kind, index), harness: harness)
            config["lease_seconds"] = 6
            daemons[daemon] = try harness.startExtraDaemon(daemon, config: config, environment: environment)
        }
        let lines = (0..<count).map { BatchTests.line("\(kind)-\($0)", stub: ["latency_ms": 120]) }
        let hidden = "\(producer.outgoing)/.\(name).jsonl.tmp"
        try DurableFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: hidden, syncDirectory: false)
        try Syscall.rename(hidden, producer.batchRequest(name))
        let server = mounts.server(kind)
        try waitUntil("the output grows", timeout: 60) {
            (((try? FileManager.default.attributesOfItem(atPath: server.batchPartial(name)))?[.size] as? Int) ?? 0) > 30_000
        }
        let owners = ["d1", "d2"].filter { SharedBatchTests.runs(harness.extraLog($0)) > 0 }
        #expect(owners.count == 1, "one daemon runs the batch: \(owners)")
        let owner = try #require(owners.first)
        return (owner, owner == "d1" ? "d2" : "d1")
    }

    /// The batch `name` of `runSharedBatch` ended completed, with one output line per
    /// custom_id, the stub's echo of its prompt (every 40th looked at). Returns the lines of
    /// `committedBefore` sent more than once.
    static func expectCompletedOnce(_ name: String, lines count: Int, _ kind: NetworkMounts.Kind, server: SpoolLayout, harness: Harness,
                                    committedBefore: Set<Int>) throws -> [Int] {
        let summary = try harness.json(server.batchSummary(name))
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(server.batchOutput(name))
        let found = BatchTests.byID(output)
        #expect(output.count == count && found.count == count, "one output line per custom_id: \(output.count) lines, \(found.count) ids")
        for index in stride(from: 0, to: count, by: 40) {
            let body = (found["\(kind)-\(index)"]?["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:]
            #expect(Harness.content(of: body)?.hasPrefix("Echo: prompt of \(kind)-\(index)") == true)
        }
        var sent: [String: Int] = [:]
        for post in try harness.stubPosts() { sent[post.prompt, default: 0] += 1 }
        return committedBefore.filter { (sent["prompt of \(kind)-\($0)"] ?? 0) > 1 }.sorted()
    }

    /// A batch dropped on the share, run by a daemon on one mount; killed mid-batch, the
    /// daemon on another mount (its own device and, on sshfs, inode numbers) takes the claim
    /// over and resumes from the journal: no line the journal had committed is sent again,
    /// and the output holds one line per custom_id.
    @Test(arguments: NetworkMounts.Kind.allCases)
    func aBatchIsResumedFromItsJournalThroughAnotherMount(_ kind: NetworkMounts.Kind) throws {
        let started = Date()
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [String: Process] = [:]
        defer {
            Self.stopAll(Array(daemons.values))
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let count = 320
        let (owner, other) = try Self.runSharedBatch("shared", lines: count, kind, mounts, harness, daemons: &daemons)
        // The server's copy is what every mount sees once its caches expire.
        let server = mounts.server(kind)
        let victim = try #require(daemons[owner])
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        let killedAt = Date()
        let committedAtKill = try SharedBatchTakeoverTests.committed(server.batchJournal("shared"))
        let sentByOwner = try Self.prompts(sentBy: owner, harness)
        #expect(!committedAtKill.isEmpty && committedAtKill.count < count, "killed mid-batch: \(committedAtKill.count) committed")
        try waitUntil("the batch ends", timeout: 120) { Syscall.isPresent(server.batchSummary("shared")) }
        let takenOver = Date()
        let otherLog = harness.extraLog(other)
        #expect(otherLog.contains("batch resumed"), "resumed from the journal: \(otherLog.suffix(2000))")
        #expect(!otherLog.contains("batch accepted"), "not started again from the first line")
        let committedAndSentAgain = try Self.expectCompletedOnce("shared", lines: count, kind, server: server, harness: harness,
                                                                 committedBefore: committedAtKill)
        let posts = try harness.stubPosts()
        let sentByOther = posts.filter { $0.path.hasPrefix("/\(other)/") }.count
        let repeated = posts.count - Set(posts.map(\.prompt)).count
        print("\(kind): batch of \(count) lines, \(owner) killed with \(committedAtKill.count) committed and \(sentByOwner.count) sent; "
              + "\(other) sent \(sentByOther), \(repeated) sent twice; ended \(String(format: "%.1f", takenOver.timeIntervalSince(killedAt))) s after the kill, "
              + "\(String(format: "%.1f", Date().timeIntervalSince(started))) s in all")
        #expect(committedAndSentAgain.isEmpty, "committed before the kill, then sent again: \(committedAndSentAgain.prefix(10))")
        #expect(Set(posts.map(\.prompt)).count == count)
        #expect(repeated <= sentByOwner.count - committedAtKill.count, "only lines the killed daemon had sent and not committed were sent again")
        #expect(sentByOther <= count - committedAtKill.count, "the other sent only what the journal did not have")
        // On sshfs the input removed while its daemon still has it open is `.fuse_hidden*`
        // until the last descriptor's release reaches sshfs (seen once in about ten runs):
        // that is waited for, a bounded time, and then it must be gone.
        try? waitUntil("outgoing is empty", timeout: 10) { harness.files(in: server.outgoing).isEmpty }
        #expect(harness.files(in: server.outgoing).isEmpty)
        #expect(!Syscall.isPresent(server.batchJournal("shared")))
        let incoming = harness.files(in: server.incoming)
        #expect(Set(incoming.filter { !$0.hasPrefix(".fuse_hidden") }) == ["shared.jsonl", "shared.batch.json"])
        let fuseHidden = incoming.filter { $0.hasPrefix(".fuse_hidden") }
        // Line answers make no file any more (they are held in memory), so none of them can
        // be left: a `.partial` of a line in flight at the kill is not among these.
        #expect(!incoming.contains { SpoolLayout.isLineTemporary($0) })
        // On sshfs this found `.fuse_hidden*` files in `incoming` now and then: each daemon's
        // start probe, closed and then removed (`theProbesLeaveNothingBehindOnSSHFS`).
        #expect(fuseHidden.isEmpty, "\(fuseHidden.count) left: \(fuseHidden.prefix(5))")
    }

    /// Lease files on the share, and the batch's owner paused (SIGSTOP) past its lease: the
    /// daemon on another mount takes the claim over and resumes into copies of its own of
    /// the output and the journal, so that what the owner writes when it wakes reaches files
    /// no name leads to; it finds its claim taken, and the output holds one line per custom_id.
    @Test(arguments: NetworkMounts.Kind.allCases)
    func aPausedOwnersBatchIsTakenOverIntoFilesOfTheTakersOwn(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [String: Process] = [:]
        defer {
            for daemon in daemons.values { kill(daemon.processIdentifier, SIGCONT) }
            Self.stopAll(Array(daemons.values))
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let count = 320
        let (owner, other) = try Self.runSharedBatch("paused", lines: count, kind, mounts, harness, daemons: &daemons,
                                                     environment: [SpoolDaemon.leaseFilesVariable: "lease-files"])
        let server = mounts.server(kind)
        let victim = try #require(daemons[owner])
        kill(victim.processIdentifier, SIGSTOP)
        let outputAtStop = try Syscall.lstat(server.batchPartial("paused")).st_ino
        let journalAtStop = try Syscall.lstat(server.batchJournal("paused")).st_ino
        let committedAtStop = try SharedBatchTakeoverTests.committed(server.batchJournal("paused"))
        #expect(!committedAtStop.isEmpty && committedAtStop.count < count, "paused mid-batch: \(committedAtStop.count) committed")
        try waitUntil("\(other) resumes the batch", timeout: 60) { harness.extraLog(other).contains("batch resumed") }
        try waitUntil("\(other) sends lines of its own", timeout: 60) {
            try harness.stubPosts().filter { $0.path.hasPrefix("/\(other)/") }.count >= 20
        }
        // On the server: the names lead to new files now, the owner's stay open on the old
        // ones. (Through the owner's own mount the name still leads to the old file: sshfs
        // numbers a mount's files by path, GlusterFS's client caches the entry.)
        for (path, before) in [(server.batchPartial("paused"), outputAtStop), (server.batchJournal("paused"), journalAtStop)] {
            #expect(try Syscall.lstat(path).st_ino != before, "\(path) is the file the paused owner had open")
        }
        kill(victim.processIdentifier, SIGCONT)
        try waitUntil("\(owner) finds its claim taken", timeout: 60) {
            harness.extraLog(owner).contains("the batch's claim was lost to another daemon")
        }
        try waitUntil("the batch ends", timeout: 120) { Syscall.isPresent(server.batchSummary("paused")) }
        let committedAndSentAgain = try Self.expectCompletedOnce("paused", lines: count, kind, server: server, harness: harness,
                                                                 committedBefore: committedAtStop)
        let posts = try harness.stubPosts()
        #expect(committedAndSentAgain.isEmpty, "committed before the pause, then sent again: \(committedAndSentAgain.prefix(10))")
        print("\(kind): paused batch of \(count) lines: \(owner) paused with \(committedAtStop.count) committed, \(other) took it over; "
              + "\(posts.count - Set(posts.map(\.prompt)).count) sent twice")
        #expect(!Syscall.isPresent(server.batchJournal("paused")))
        try? waitUntil("no temporary or partial is left", timeout: 10) {
            harness.files(in: server.incoming).filter { !$0.hasPrefix(".fuse_hidden") }.sorted() == ["paused.batch.json", "paused.jsonl"]
        }
        #expect(harness.files(in: server.incoming).filter { !$0.hasPrefix(".fuse_hidden") }.sorted() == ["paused.batch.json", "paused.jsonl"])
    }

    /// `incoming` removed through another mount while a batch runs on the share: its
    /// runner gives the output its name back from the file it holds (a copy linked to the
    /// name, since on a shared spool nothing under the name is replaced), keeps the batch,
    /// and ends it with every line once. On sshfs a file's two names look like two files
    /// (inode numbers per path): the runner must still know the output under the name for
    /// its own, or it would take it for a taker's and give the batch up.
    @Test(arguments: NetworkMounts.Kind.allCases)
    func aBatchWhoseOutputFolderIsRemovedThroughAnotherMountKeepsEveryLineOnce(_ kind: NetworkMounts.Kind) throws {
        let mounts = try NetworkMounts()
        let harness = try Harness()
        var daemons: [String: Process] = [:]
        defer {
            Self.stopAll(Array(daemons.values))
            harness.stop()
            mounts.down()
        }
        try harness.startStub()
        let count = 320
        let (owner, _) = try Self.runSharedBatch("kept", lines: count, kind, mounts, harness, daemons: &daemons)
        let server = mounts.server(kind)
        let committedBefore = try SharedBatchTakeoverTests.committed(server.batchJournal("kept"))
        try FileManager.default.removeItem(atPath: mounts.spool(kind, 2).incoming)
        try waitUntil("the batch ends", timeout: 120) { Syscall.isPresent(server.batchSummary("kept")) }
        let log = harness.extraLog(owner)
        #expect(log.contains("the batch's output was removed while it ran"), "\(log.suffix(1500))")
        #expect(!log.contains("the batch's claim was lost to another daemon"), "the runner kept its batch")
        let summary = try harness.json(server.batchSummary("kept"))
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(server.batchOutput("kept"))
        let found = BatchTests.byID(output)
        #expect(output.count == count && found.count == count, "one output line per custom_id: \(output.count) lines, \(found.count) ids")
        let posts = try harness.stubPosts()
        #expect(posts.count == count, "each line sent once, the \(committedBefore.count) committed before the removal included: \(posts.count)")
        try? waitUntil("nothing is left in incoming but the outcome", timeout: 10) {
            harness.files(in: server.incoming).sorted() == ["kept.batch.json", "kept.jsonl"]
        }
        #expect(harness.files(in: server.incoming).sorted() == ["kept.batch.json", "kept.jsonl"])
    }
}

/// A flag one thread sets and another reads.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
