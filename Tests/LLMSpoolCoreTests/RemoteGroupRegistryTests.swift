import Foundation
import Synchronization
import Testing
@testable import LLMSpoolCore

/// The groups of the background lane on a shared spool, as two daemons' registries see
/// them: a live daemon's group is left to it, one whose follower is gone is adopted once,
/// and each claim of a request is judged against them.
@Suite struct RemoteGroupRegistryTests {
    struct Daemon {
        let leases: LeaseManager
        let registry: RemoteGroupRegistry
    }

    func spool() throws -> SpoolLayout {
        let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-groups-\(UUID().uuidString)")
        try layout.create()
        return layout
    }

    /// The batch files a daemon's runner runs.
    final class Running: Sendable {
        let names = Mutex<Set<String>>([])
    }

    func daemon(_ layout: SpoolLayout, _ host: String, running: Running = Running()) -> Daemon {
        let logger = Logger(minimum: .error)
        let leases = LeaseManager(layout: layout, hostID: host, seconds: 30, logger: logger)
        return Daemon(leases: leases, registry: RemoteGroupRegistry(store: RemoteIntentStore(layout: layout), leases: leases, logger: logger,
                                                                    runsBatch: { name in running.names.withLock { $0.contains(name) } }))
    }

    func intent(_ group: String, state: RemoteBatchState = .polling, members: [String]) -> RemoteIntent {
        RemoteIntent(group: group, state: state, endpoint: "openai", url: "/v1/chat/completions", createdAt: 7,
                     members: members.map { .init(id: $0, request: nil) }, inputFileID: "file-1", batchID: "batch_1")
    }

    @Test func aLiveDaemonsGroupIsLeftToItAndAGoneOnesIsAdoptedOnce() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let (one, two) = (daemon(layout, "one"), daemon(layout, "two"))
        let group = intent("g1", members: ["a", "b", ".n.jsonl.0"])
        #expect(one.registry.claimNew(group: "g1", members: group.members.map(\.id)))
        try RemoteIntentStore(layout: layout).write(group)

        #expect(one.registry.judge("a", tookOver: true) { _ in Issue.record("its own group adopted again") } == .rejoin)
        #expect(two.registry.adoptUnfollowed().isEmpty, "followed by a live daemon")
        #expect(two.registry.judge("a", tookOver: true) { _ in } == .leave)
        #expect(two.registry.judge("other", tookOver: false) { _ in } == .proceed)

        // Its follower lets go of the claim (as a dead daemon's lock or lease does).
        one.leases.release(RemoteGroupClaims.claimID(group: "g1"), ended: false)
        var adopted: [RemoteIntent] = []
        #expect(two.registry.judge("b", tookOver: true) { adopted += $0 } == .rejoin)
        #expect(adopted == [group])
        #expect(two.leases.holds(RemoteGroupClaims.claimID(group: "g1")))
        #expect(two.registry.adoptUnfollowed().isEmpty, "adopted once")
        #expect(two.registry.judge("a", tookOver: false) { _ in Issue.record("adopted twice") } == .rejoin)

        // A new file under a member's name is judged as any request's.
        two.registry.notMember("a", of: "g1")
        #expect(two.registry.judge("a", tookOver: false) { _ in } == .proceed)

        // At its end, the record goes and its claim is a tombstone: nobody adopts it again.
        #expect(two.registry.stillMine(group: "g1") == true)
        try RemoteIntentStore(layout: layout).remove(group: "g1")
        two.registry.forget(group: "g1", ended: true)
        #expect(two.registry.judge("b", tookOver: true) { _ in } == .proceed)
        #expect(one.registry.adoptUnfollowed().isEmpty)
    }

    @Test func aGoneFollowersGroupWithNothingRemoteIsFormedAgainAndALiveOnesIsNot() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let (one, two) = (daemon(layout, "one"), daemon(layout, "two"))
        let store = RemoteIntentStore(layout: layout)
        #expect(one.registry.claimNew(group: "live", members: ["a"]))
        try store.write(intent("live", state: .intent, members: ["a"]))
        try store.write(intent("orphan", state: .intent, members: ["b"]))
        #expect(two.registry.adoptUnfollowed().isEmpty)
        #expect(try store.groups() == ["live"], "the live daemon may be uploading: its record stays")
        #expect(two.registry.judge("b", tookOver: true) { _ in } == .proceed)
    }

    @Test func aGroupWithLinesIsAdoptedOnlyByTheRunnerOfTheirBatch() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let running = Running()
        let (runner, other) = (daemon(layout, "runner", running: running), daemon(layout, "other"))
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: layout.batchRequest("n")))
        let group = intent("g1", members: ["a", SpoolLayout.lineID(batch: "n", entry: 0)])
        try RemoteIntentStore(layout: layout).write(group)
        // Its follower is gone (its claim free), and nobody runs the batch yet.
        #expect(other.registry.adoptUnfollowed().isEmpty)
        #expect(!other.leases.holds(RemoteGroupClaims.claimID(group: "g1")), "the claim is let go for the batch's runner")
        #expect(other.registry.judge("a", tookOver: true) { _ in } == .leave, "its request is not sent meanwhile")
        #expect(other.registry.lineWaits(SpoolLayout.lineID(batch: "n", entry: 3)))
        #expect(!other.registry.lineWaits(SpoolLayout.lineID(batch: "m", entry: 0)))
        #expect(!other.registry.lineWaits("a"))
        // The daemon that takes the batch over adopts it once it runs it: not while it only
        // holds the batch's claim, taken to look at the batch (which may then be let go).
        #expect(runner.leases.claim(BatchClaimRules.claimID(batch: "n")) == .claimed)
        #expect(runner.registry.adoptUnfollowed().isEmpty, "the batch is claimed, not run")
        #expect(!runner.leases.holds(RemoteGroupClaims.claimID(group: "g1")))
        #expect(runner.registry.lineWaits(SpoolLayout.lineID(batch: "n", entry: 0)))
        running.names.withLock { _ = $0.insert("n") }
        #expect(runner.registry.adoptUnfollowed() == [group])
        #expect(!runner.registry.lineWaits(SpoolLayout.lineID(batch: "n", entry: 0)))
    }

    /// A daemon paused past its lease finds its group's claim taken: the group is the new
    /// follower's from then on, for the requests claimed here again and for the lines of its
    /// batch, before any look at `state/remote`.
    @Test func aLostGroupIsKnownAsTheNewFollowersAtOnce() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let (paused, taker) = (daemon(layout, "paused"), daemon(layout, "taker"))
        let line = SpoolLayout.lineID(batch: "n", entry: 0)
        let group = intent("g1", members: ["a", line])
        #expect(paused.registry.claimNew(group: "g1", members: group.members.map(\.id)))
        try RemoteIntentStore(layout: layout).write(group)
        #expect(paused.registry.judge("a", tookOver: false) { _ in } == .rejoin)
        // Its lease expired and was taken (as a lock is freed here).
        paused.leases.release(RemoteGroupClaims.claimID(group: "g1"), ended: false)
        #expect(taker.registry.adoptUnfollowed() == [group])

        paused.registry.lost(group: "g1", members: group.members.map(\.id))
        #expect(!paused.leases.holds(RemoteGroupClaims.claimID(group: "g1")))
        var adoptedBack: [RemoteIntent] = []
        #expect(paused.registry.judge("a", tookOver: false) { adoptedBack += $0 } == .leave, "not sent again here")
        #expect(adoptedBack.isEmpty)
        #expect(paused.registry.lineWaits(SpoolLayout.lineID(batch: "n", entry: 4)), "a line of its batch waits")
        #expect(paused.registry.stillMine(group: "g1") == false)
    }

    /// A request let go as a member of a live daemon's group (`LeaseClaimer`'s `.leave`),
    /// whose follower then dies before it claims the request: the group may have been
    /// recorded after the next claimer's last look, and that claim must look again. It does
    /// because the lease is left expired, not removed: the claim is a takeover.
    @Test(arguments: [false, true]) func aRequestLetGoIsTakenOverNextSoItsGroupIsLookedFor(locks: Bool) throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let (one, two) = (daemon(layout, "one"), daemon(layout, "two"))
        if locks {
            for daemon in [one, two] { daemon.leases.chooseMethod() }
            guard one.leases.method == .locks else { return }
        }
        // Two has just looked: nothing recorded yet.
        #expect(two.registry.judge("x", tookOver: false) { _ in } == .proceed)
        #expect(one.leases.claim("a") == .claimed)
        #expect(one.registry.claimNew(group: "g1", members: ["a"]))
        let group = intent("g1", members: ["a"])
        try RemoteIntentStore(layout: layout).write(group)
        // The claim of "a" let go (as a daemon that found it in this group does), then the
        // group's follower dies: its claim is free.
        one.leases.letGo("a")
        one.leases.release(RemoteGroupClaims.claimID(group: "g1"), ended: false)

        var tookOver = false
        #expect(two.leases.claim("a", tookOver: &tookOver) == .claimed)
        #expect(tookOver, "a claim over a lease let go is a takeover")
        var adopted: [RemoteIntent] = []
        #expect(two.registry.judge("a", tookOver: tookOver) { adopted += $0 } == .rejoin, "not sent again")
        #expect(adopted == [group])

        // Let go by its former holder, it is a takeover for that daemon too.
        two.leases.letGo("a")
        #expect(one.leases.claim("a", tookOver: &tookOver) == .claimed)
        #expect(tookOver)
    }

    /// A starting daemon takes back its dead earlier run's leases (lease files) at once,
    /// leaving them expired: the next claim of each, its own or another daemon's, is a
    /// takeover.
    @Test func anEarlierRunsLeaseTakenBackIsTakenOverNext() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let host = daemon(layout, "host")
        // No pid is above the kernel's limit (2^22): that run is dead.
        let dead = JSONObject.encode(["owner": "host:4194400:old", "expires_at": Date().timeIntervalSince1970 + 30, "host": "host"] as [String: Any])
        try Data(dead).write(to: URL(fileURLWithPath: layout.lease("a")))
        #expect(host.leases.reclaimDeadIncarnations() == ["a"])
        var tookOver = false
        #expect(host.leases.claim("a", tookOver: &tookOver) == .claimed)
        #expect(tookOver)
    }

    @Test func withoutLeasesEveryRecordIsFollowed() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let registry = RemoteGroupRegistry(store: RemoteIntentStore(layout: layout), leases: nil, logger: Logger(minimum: .error))
        let store = RemoteIntentStore(layout: layout)
        try store.write(intent("g1", members: ["a"]))
        try store.write(intent("g2", state: .published, members: ["b"]))
        #expect(registry.adoptUnfollowed().map(\.group) == ["g1"])
        #expect(try store.groups() == ["g1"])
        #expect(registry.stillMine(group: "g1") == nil)
    }
}
