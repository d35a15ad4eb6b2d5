import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Two daemons with leases on one spool and the background lane: a remote batch has one
/// follower at a time. The daemon that takes over the claims of one killed while its remote
/// batch runs adopts that batch (follows it to its end, publishes each member once) instead
/// of sending its members again, live or in a new group; and a daemon that starts beside a
/// live one leaves the live one's batch alone.
@Suite(.serialized) struct LaneGroupTakeoverTests {
    static func config(_ harness: Harness, _ host: String) -> [String: Any] {
        LaneSharedSpoolTests.config(harness, ["host_id": host, "watch_mode": "poll", "poll_interval_seconds": 0.2])
    }

    static let prompt = "Adopted"

    /// How claims are held: locks (a dead daemon's claims are free at once), or lease files
    /// (taken over once expired; a lease time of 9 s renews every 3 s, so that a group formed
    /// just before the kill may expire seconds after the claims of its members or its batch).
    static let methods = ["locks", "lease-files"]

    static func daemonConfig(_ harness: Harness, _ host: String, method: String) -> [String: Any] {
        var config = Self.config(harness, host)
        if method == "lease-files" { config["lease_seconds"] = 9 }
        return config
    }

    static func environment(_ method: String) -> [String: String] {
        method == "lease-files" ? [SpoolDaemon.leaseFilesVariable: "lease-files"] : [:]
    }

    /// Kills `victim` with SIGKILL, waits for every request's result, and checks that each
    /// was paid once; a wait that fails still says what the failure cost (the requests
    /// paid again, live or in a new group) before it throws.
    static func killThenExpectPaidOnce(_ victim: Process, _ harness: Harness, _ ids: [String], groupsBefore: Set<String>) throws {
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        do {
            try waitForEveryResult(harness, ids)
        } catch {
            try expectPaidOnce(harness, ids, groupsBefore: groupsBefore)
            throw error
        }
        try expectPaidOnce(harness, ids, groupsBefore: groupsBefore)
    }

    /// The daemons `names` on one spool, each with its own config and log.
    static func startDaemons(_ harness: Harness, _ names: [String], method: String) throws -> [String: Process] {
        var daemons: [String: Process] = [:]
        for name in names {
            daemons[name] = try harness.startExtraDaemon(name, config: daemonConfig(harness, name, method: method), environment: environment(method))
        }
        return daemons
    }

    /// The daemon to kill (one that created a remote batch) and the other of the two.
    static func victimAndSurvivor(_ harness: Harness, _ names: [String]) throws -> (victim: String, survivor: String) {
        let victim = try #require(creators(harness, names).first)
        return (victim, victim == "d1" ? "d2" : "d1")
    }

    /// The daemons among `names` whose log says a remote batch was created.
    static func creators(_ harness: Harness, _ names: [String]) -> [String] {
        names.filter { harness.extraLog($0).contains("remote batch created") }
    }

    /// The members of the groups recorded in `state/remote` whose remote batch exists
    /// (`created` or later). A record read while it is replaced counts as none.
    static func membersOfCreatedGroups(_ harness: Harness) -> [String] {
        harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.flatMap { name -> [String] in
            guard let bytes = FileManager.default.contents(atPath: harness.layout.remote + "/" + name),
                  let intent = try? RemoteIntent.decode(Array(bytes)), intent.state >= .created else { return [] }
            return intent.members.map(\.id)
        }
    }

    /// Waits until the groups of the moment are all made: every request is a member of a
    /// recorded group whose remote batch exists, and the stub's creations stay the same
    /// across two looks 0.3 s apart (a create the stub answered but its daemon has not
    /// recorded yet shows there). A fixed sleep would take a snapshot too early on a loaded
    /// machine, and a group made after it, by correct behaviour, would fail the test.
    static func waitForGroupsMade(_ harness: Harness, _ what: String, timeout: TimeInterval = 60,
                                  members done: ([String]) -> Bool) throws -> Set<String> {
        var last: [String: Int]?
        var lastAt = Date.distantPast
        var made: [String: Int] = [:]
        try waitUntil("\(what) is in a created remote batch and no other is being created", timeout: timeout) {
            guard done(Self.membersOfCreatedGroups(harness)) else {
                last = nil
                return false
            }
            guard Date().timeIntervalSince(lastAt) >= 0.3 else { return false }
            made = try BackgroundLaneTests().creations(harness)
            lastAt = Date()
            defer { last = made }
            return made == last
        }
        return Set(made.keys)
    }

    /// Waits for `waitForGroupsMade` with every one of `ids` a member.
    static func waitForGroupsMade(_ harness: Harness, ids: [String]) throws -> Set<String> {
        try waitForGroupsMade(harness, "every request") { Set(ids).isSubset(of: Set($0)) }
    }

    /// Every id has one result and left `outgoing`, and no intent record is left.
    static func waitForEveryResult(_ harness: Harness, _ ids: [String], timeout: TimeInterval = 90) throws {
        do {
            try waitUntil("every request is answered and no group is left", timeout: timeout) {
                ids.allSatisfy { Syscall.isPresent(harness.layout.result($0)) && !Syscall.isPresent(harness.layout.request($0)) }
                    && harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty
            }
        } catch {
            let missing = ids.filter { !Syscall.isPresent(harness.layout.result($0)) }
            Issue.record("unanswered: \(missing); records left: \(harness.files(in: harness.layout.remote))")
            throw error
        }
    }

    /// Each request answered by the remote batches, none sent live, one attempt each, and no
    /// group created after `groupsBefore`, each of them created once.
    static func expectPaidOnce(_ harness: Harness, _ ids: [String], groupsBefore: Set<String>) throws {
        for id in ids {
            #expect(try harness.arrivals(of: "\(prompt) \(id)").isEmpty, "\(id) was sent live")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1, "\(id): \(attempts)")
            #expect(attempts.first?["remote_batch"] != nil, "\(id) answered by a remote batch: \(attempts)")
        }
        let made = try BackgroundLaneTests().creations(harness)
        #expect(Set(made.keys) == groupsBefore, "no group created after the kill: \(made) against \(groupsBefore)")
        #expect(made.values.allSatisfy { $0 == 1 }, "each group created once: \(made)")
        #expect(harness.files(in: harness.layout.failed).isEmpty)
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".partial") }.isEmpty)
    }

    @Test(arguments: methods) func theTakerOfAKilledDaemonsClaimsAdoptsItsRemoteBatch(method: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "8"])
        let names = ["d1", "d2"]
        let daemons = try Self.startDaemons(harness, names, method: method)
        let ids = (0..<6).map { "a\($0)" }
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "\(Self.prompt) \(id)")) }
        // Both may have formed a group of their own (or more than one): the groups of the
        // moment, every one of them made, before the kill.
        let groupsBefore = try Self.waitForGroupsMade(harness, ids: ids)
        let (victimName, survivorName) = try Self.victimAndSurvivor(harness, names)
        let victim = try #require(daemons[victimName])
        #expect(!harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty, "the batch runs at the kill")
        try Self.killThenExpectPaidOnce(victim, harness, ids, groupsBefore: groupsBefore)
        let survivor = harness.extraLog(survivorName)
        #expect(survivor.contains("adopting the remote batch of a daemon that is gone"), "\(survivorName) adopted the group")
        let count = { (text: String) in survivor.components(separatedBy: text).count - 1 }
        print("\(method): \(victimName) killed with \(groupsBefore.count) group(s) created; \(survivorName): \(count("took over the claim") + count("took over an expired lease")) claims taken over, "
              + "\(count("adopting the remote batch")) group(s) adopted, \(count("found again for its remote batch")) members found again, "
              + "\(count("instead of starting")) turned back from a live start")
    }

    /// The taker does not batch (its endpoint says `"batch": false`): each member it takes
    /// over would start live, and goes back to the adopted batch instead. Locks free a dead
    /// daemon's claims at once; a lease time of 30 s puts the periodic look for unfollowed
    /// groups 10 s away, so that the members' takeover is what finds the group.
    @Test func aTakerThatDoesNotBatchStillFollowsTheAdoptedBatchAndSendsNothingLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "8"])
        var batching = Self.config(harness, "d1")
        batching["lease_seconds"] = 30
        let victim = try harness.startExtraDaemon("d1", config: batching)
        let ids = (0..<4).map { "c\($0)" }
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "\(Self.prompt) \(id)")) }
        try waitUntil("the remote batch is created", timeout: 30) { harness.extraLog("d1").contains("remote batch created") }
        var live = Self.config(harness, "d2")
        live["lease_seconds"] = 30
        live["endpoints"] = [["name": "batchy", "base_url": harness.stubURL, "batch": false]]
        // Its requests may have been found in two polls, and grouped twice.
        let groupsBefore = try Self.waitForGroupsMade(harness, ids: ids)
        _ = try harness.startExtraDaemon("d2", config: live)
        try Self.killThenExpectPaidOnce(victim, harness, ids, groupsBefore: groupsBefore)
        let survivor = harness.extraLog("d2")
        #expect(survivor.contains("adopting the remote batch of a daemon that is gone"))
        // Adopted by its periodic look before a member arrived (each then goes back to the batch
        // at intake), or when a member's claim was taken over (turned back from its live start).
        let count = { (text: String) in survivor.components(separatedBy: text).count - 1 }
        #expect(count("found again for its remote batch") == ids.count, "every member found again by the adopted group")
        #expect(count("instead of starting") > 0, "a member's live start was turned back")
        print("d2 (no batch endpoint): \(count("instead of starting")) members turned back from a live start, "
              + "\(count("found again for its remote batch")) found again by the adopted group")
    }

    /// A batch file's lines in the owner's remote batch: the daemon that takes the batch over
    /// from its journal adopts that remote batch before it feeds the lines again, and each
    /// line comes back from it once.
    /// Waits for the batch `name` to end with no group left, then checks its output holds
    /// one line for each of `ids`.
    static func waitForTheBatchToEndOnce(_ harness: Harness, _ name: String, _ ids: [String]) throws {
        do {
            try waitUntil("the batch ends and no group is left", timeout: 90) {
                Syscall.isPresent(harness.layout.batchSummary(name)) && harness.files(in: harness.layout.remote).filter { $0.hasSuffix(".json") }.isEmpty
            }
        } catch {
            Issue.record("records left: \(harness.files(in: harness.layout.remote)); creations \(try BackgroundLaneTests().creations(harness))")
            throw error
        }
        _ = try BackgroundLaneBatchFileTests().expectOneLineEach(harness, name, ids)
    }

    @Test(arguments: methods) func theTakerOfABatchFileAdoptsTheRemoteBatchOfItsLines(method: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "8"])
        let names = ["d1", "d2"]
        let daemons = try Self.startDaemons(harness, names, method: method)
        let ids = (0..<5).map { "l\($0)" }
        try BatchTests.dropBatch(harness, "nightly", ids.map { BackgroundLaneBatchFileTests.line($0, "\(Self.prompt) \($0)") })
        // Every line in a remote batch: one fed after the kill would be grouped again, rightly.
        let groupsBefore = try Self.waitForGroupsMade(harness, "every line") { $0.count == ids.count }
        let (victimName, survivorName) = try Self.victimAndSurvivor(harness, names)
        let victim = try #require(daemons[victimName])
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        try Self.waitForTheBatchToEndOnce(harness, "nightly", ids)
        for id in ids { #expect(try harness.arrivals(of: "\(Self.prompt) \(id)").isEmpty, "\(id) was sent live") }
        let made = try BackgroundLaneTests().creations(harness)
        #expect(Set(made.keys) == groupsBefore && made.values.allSatisfy { $0 == 1 }, "no group created after the kill: \(made) against \(groupsBefore)")
        let survivor = harness.extraLog(survivorName)
        #expect(survivor.contains("adopting the remote batch of a daemon that is gone"))
        let count = { (text: String) in survivor.components(separatedBy: text).count - 1 }
        print("\(method): \(victimName) killed running the batch file; \(survivorName): \(count("held aside until")) lines held aside "
              + "until the group was adopted, \(count("found again for its remote batch")) found again by it")
    }

    /// A batch file's lines in the owner's remote batch, taken over by a daemon that does not
    /// batch (its endpoint says `"batch": false`, so every line is routed live there) while
    /// the group's claim is still held: with lease files a group's claim may outlive its
    /// batch's by a renewal's interval, and here `GroupClaimKeeper` renews it, as the dead
    /// daemon's last renewal would, until the taker has fed the lines. A line the group
    /// carries waits for it whatever its route, and comes back from it once. Before, the
    /// taker sent every line live at once, and the adopted remote batch answered them too:
    /// each line paid twice.
    @Test func aLineRoutedLiveWaitsForTheGroupThatCarriesIt() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "8"])
        let victim = try harness.startExtraDaemon("d1", config: Self.daemonConfig(harness, "d1", method: "lease-files").merging(["lease_seconds": 3]) { $1 },
                                                  environment: Self.environment("lease-files"))
        let ids = (0..<4).map { "r\($0)" }
        try BatchTests.dropBatch(harness, "nightly", ids.map { BackgroundLaneBatchFileTests.line($0, "\(Self.prompt) \($0)") })
        let groupsBefore = try Self.waitForGroupsMade(harness, "every line") { $0.count == ids.count }
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        let keeper = GroupClaimKeeper(paths: groupsBefore.map { harness.layout.lease(RemoteGroupClaims.claimID(group: $0)) }, seconds: 3)
        defer { keeper.stop() }
        var live = Self.daemonConfig(harness, "d2", method: "lease-files")
        live["lease_seconds"] = 3
        live["endpoints"] = [["name": "batchy", "base_url": harness.stubURL, "batch": false]]
        _ = try harness.startExtraDaemon("d2", config: live, environment: Self.environment("lease-files"))
        let sentLive = { try ids.filter { !(try harness.arrivals(of: "\(Self.prompt) \($0)")).isEmpty } }
        try waitUntil("d2 resumes the batch and holds its lines aside (or sends one live)", timeout: 60) {
            let log = harness.extraLog("d2")
            return try !sentLive().isEmpty
                || (log.contains("batch resumed") && log.components(separatedBy: "held aside until").count - 1 >= ids.count)
        }
        #expect(try sentLive().isEmpty, "sent live while the group that carries them was not adopted yet")
        // The group's claim expires: d2 adopts the group, and each line goes back to it.
        keeper.stop()
        try Self.waitForTheBatchToEndOnce(harness, "nightly", ids)
        #expect(try sentLive().isEmpty, "a line was sent live")
        let made = try BackgroundLaneTests().creations(harness)
        #expect(Set(made.keys) == groupsBefore && made.values.allSatisfy { $0 == 1 }, "no group created after the kill: \(made) against \(groupsBefore)")
        #expect(harness.extraLog("d2").contains("adopting the remote batch of a daemon that is gone"))
    }

    /// A batch file's lines in the owner's remote batch, and the batch's claim alone lost:
    /// with lease files a batch's claim and its group's are renewed apart, so a daemon paused
    /// past its lease can wake holding its group's claim and find its batch's taken. Here
    /// the batch's lease is written as another daemon's while d1 runs. Before, d1 withdrew
    /// the lines from their group and cancelled its remote batch (the answers lost), and
    /// the batch's next runner, holding the lines aside for that group, sent them live once
    /// it ended: paid twice. Now d1 lets the group go, and whoever runs the batch next (d2,
    /// or d1 again once the other's claim expires) adopts it.
    @Test func aDaemonThatLosesABatchsClaimLetsTheGroupOfItsLinesGoToItsNextRunner() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "8"])
        var config = Self.daemonConfig(harness, "d1", method: "lease-files")
        config["lease_seconds"] = 3
        _ = try harness.startExtraDaemon("d1", config: config, environment: Self.environment("lease-files"))
        let ids = (0..<4).map { "w\($0)" }
        try BatchTests.dropBatch(harness, "nightly", ids.map { BackgroundLaneBatchFileTests.line($0, "\(Self.prompt) \($0)") })
        let groupsBefore = try Self.waitForGroupsMade(harness, "every line") { $0.count == ids.count }
        let lease = harness.layout.lease(BatchClaimRules.claimID(batch: "nightly"))
        let taken: [String: Any] = ["owner": "elsewhere-1-test", "host": "elsewhere", "expires_at": Date().timeIntervalSince1970 + 4]
        try JSONSerialization.data(withJSONObject: taken).write(to: URL(fileURLWithPath: lease))
        try waitUntil("d1 finds the batch's claim taken", timeout: 30) {
            harness.extraLog("d1").contains("the batch's claim was lost to another daemon")
        }
        config = Self.daemonConfig(harness, "d2", method: "lease-files")
        config["lease_seconds"] = 3
        _ = try harness.startExtraDaemon("d2", config: config, environment: Self.environment("lease-files"))
        try Self.waitForTheBatchToEndOnce(harness, "nightly", ids)
        for id in ids { #expect(try harness.arrivals(of: "\(Self.prompt) \(id)").isEmpty, "\(id) was sent live") }
        let made = try BackgroundLaneTests().creations(harness)
        #expect(Set(made.keys) == groupsBefore && made.values.allSatisfy { $0 == 1 }, "no group created again: \(made) against \(groupsBefore)")
        #expect(try BackgroundLaneTests().cancelledGroups(harness).isEmpty, "the remote batch was cancelled")
        #expect(harness.extraLog("d1").contains("the group is left for its runner to adopt"))
        let adopter = ["d1", "d2"].filter { harness.extraLog($0).contains("adopting the remote batch") }
        print("the batch's group let go by d1 and adopted by \(adopter)")
    }

    /// As above, but the lane's thread is busy (held 8 s after a poll, as a long upload or
    /// download holds it) while the batch's claim is lost and then free again: d1 takes the
    /// batch back itself. Before, the lines' withdrawals were judged once the lane got to
    /// them, after the batch ran here again: each line ended `batch_cancelled` in a batch
    /// that went on, and the remote batch was cancelled. Now the lane hears of the loss
    /// first, and the batch runs here again only once the lines of the lost run are ended.
    @Test func aBatchTakenBackByTheDaemonThatLostItGetsItsLinesFromTheSameGroup() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "20"])
        var environment = Self.environment("lease-files")
        environment["LLMSPOOL_TEST_LANE_PAUSE"] = "polled"
        environment["LLMSPOOL_TEST_LANE_PAUSE_SECONDS"] = "8"
        var config = Self.daemonConfig(harness, "d1", method: "lease-files")
        config["lease_seconds"] = 3
        _ = try harness.startExtraDaemon("d1", config: config, environment: environment)
        let ids = (0..<4).map { "t\($0)" }
        try BatchTests.dropBatch(harness, "nightly", ids.map { BackgroundLaneBatchFileTests.line($0, "\(Self.prompt) \($0)") })
        try waitUntil("the lane holds its thread after a poll", timeout: 60) { harness.extraLog("d1").contains("lane test pause") }
        let lease = harness.layout.lease(BatchClaimRules.claimID(batch: "nightly"))
        let taken: [String: Any] = ["owner": "elsewhere-1-test", "host": "elsewhere", "expires_at": Date().timeIntervalSince1970 + 3]
        try JSONSerialization.data(withJSONObject: taken).write(to: URL(fileURLWithPath: lease))
        try waitUntil("d1 finds the batch's claim taken", timeout: 30) {
            harness.extraLog("d1").contains("the batch's claim was lost to another daemon")
        }
        try Self.waitForTheBatchToEndOnce(harness, "nightly", ids)
        let output = try BatchTests.byID(BatchTests.outputLines(harness.layout.batchOutput("nightly")))
        for id in ids {
            #expect(output[id]?["error"] is NSNull, "\(id): \(String(describing: output[id]))")
            #expect(try harness.arrivals(of: "\(Self.prompt) \(id)").isEmpty, "\(id) was sent live")
        }
        #expect(try BackgroundLaneTests().cancelledGroups(harness).isEmpty, "the remote batch was cancelled")
        let made = try BackgroundLaneTests().creations(harness)
        #expect(made.count == 1 && made.values.allSatisfy { $0 == 1 }, "one remote batch, created once: \(made)")
        let log = harness.extraLog("d1")
        #expect(log.components(separatedBy: "batch resumed").count - 1 >= 1, "d1 ran the batch again")
        #expect(log.contains("the group is left for its runner to adopt"))
    }

    @Test func aDaemonStartedBesideALiveOneLeavesItsRemoteBatchAlone() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "6"])
        _ = try harness.startExtraDaemon("d1", config: Self.config(harness, "d1"))
        let ids = (0..<3).map { "b\($0)" }
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "\(Self.prompt) \(id)")) }
        let groupsBefore = try Self.waitForGroupsMade(harness, ids: ids)
        _ = try harness.startExtraDaemon("d2", config: Self.config(harness, "d2"))
        try Self.waitForEveryResult(harness, ids)
        try Self.expectPaidOnce(harness, ids, groupsBefore: groupsBefore)
        #expect(!harness.extraLog("d2").contains("resuming a remote batch"), "d2 followed d1's batch beside it")
        // Logged just after its record is removed.
        try waitUntil("d1 says it published its batch", timeout: 30) { harness.extraLog("d1").contains("remote batch published") }
    }

    /// A daemon paused (SIGSTOP) past its lease with a group recorded and nothing remote yet
    /// (lease files, 3 s): the other daemon takes its requests over, forms them again and
    /// creates its own remote batch. The paused daemon, woken, must not upload and create
    /// the group it no longer holds (the requests paid twice): its upload waits for the
    /// keeper, which finds the group's claim taken, and the group is dropped here.
    @Test func aDaemonPausedPastItsLeaseDoesNotCreateTheGroupAnotherDaemonTookOver() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3"])
        let ids = (0..<3).map { "p\($0)" }
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "\(Self.prompt) \(id)")) }
        var leaseFiles = Self.config(harness, "d1")
        leaseFiles["lease_seconds"] = 3
        var environment = Self.environment("lease-files")
        // The lane waits 30 s once its group's intent is recorded, before the upload.
        environment["LLMSPOOL_TEST_LANE_PAUSE"] = "intent"
        let paused = try harness.startExtraDaemon("d1", config: leaseFiles, environment: environment)
        try waitUntil("d1 recorded its group", timeout: 30) { harness.extraLog("d1").contains("lane test pause") }
        kill(paused.processIdentifier, SIGSTOP)
        defer { kill(paused.processIdentifier, SIGCONT) }
        var taker = Self.config(harness, "d2")
        taker["lease_seconds"] = 3
        _ = try harness.startExtraDaemon("d2", config: taker, environment: Self.environment("lease-files"))
        try Self.waitForEveryResult(harness, ids)
        let made = try BackgroundLaneTests().creations(harness)
        #expect(made.count == 1 && made.values.allSatisfy { $0 == 1 }, "d2's group alone is created: \(made)")
        kill(paused.processIdentifier, SIGCONT)
        // Woken, d1's lane goes on from its pause (30 s after it began) to the upload.
        try waitUntil("d1 gives its group up (or goes on with it)", timeout: 60) {
            let log = harness.extraLog("d1")
            return log.contains("the claim of a remote batch's group was taken by another daemon") || log.contains("input uploaded")
        }
        usleep(500_000)
        let after = try BackgroundLaneTests().creations(harness)
        #expect(after == made, "d1 created no second remote batch: \(after)")
        #expect(!harness.extraLog("d1").contains("input uploaded"), "d1 uploaded nothing")
        for id in ids {
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1, "\(id): \(attempts)")
        }
    }
}

/// Renews groups' lease files in place (owner and host kept, the expiry pushed on) every
/// half second until `stop`, as a daemon that still follows those groups would: their
/// claims stay held while the test needs them so, then expire as a dead daemon's do.
final class GroupClaimKeeper: @unchecked Sendable {
    private let lock = NSLock()
    private var stopping = false
    private let stopped = DispatchSemaphore(value: 0)
    private var running = true

    init(paths: [String], seconds: Double) {
        Thread.detachNewThread { [self] in
            while !lock.withLock({ stopping }) {
                for path in paths { Self.renew(path, seconds: seconds) }
                usleep(500_000)
            }
            stopped.signal()
        }
    }

    private static func renew(_ path: String, seconds: Double) {
        guard let bytes = FileManager.default.contents(atPath: path),
              var lease = (try? JSONSerialization.jsonObject(with: bytes)) as? [String: Any], lease["ended"] == nil else { return }
        lease["expires_at"] = Date().timeIntervalSince1970 + seconds
        guard let data = try? JSONSerialization.data(withJSONObject: lease) else { return }
        try? data.write(to: URL(fileURLWithPath: path))
    }

    /// Stops renewing; returns once the last renewal is written. Called again, does nothing.
    func stop() {
        let wasRunning = lock.withLock { () -> Bool in
            defer { running = false; stopping = true }
            return running
        }
        if wasRunning { stopped.wait() }
    }
}
