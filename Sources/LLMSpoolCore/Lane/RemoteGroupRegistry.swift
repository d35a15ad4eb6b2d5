import Foundation
import Synchronization

/// Which groups of the background lane this daemon follows and which live daemons follow
/// the others, shared by the lane's thread and the claims' thread: a request claimed is
/// judged against it (`RemoteGroupClaims.member`), and the groups whose follower is gone
/// are adopted through it, each by one daemon, under the group's claim. Every look at
/// `state/remote` and every group claim happen under one lock, so the two threads never
/// adopt one group twice.
final class RemoteGroupRegistry: Sendable {
    private struct State {
        /// Groups this daemon follows, and the group of each of their members. Only request
        /// files: a batch's lines have no claims of their own, and a group of 50,000 lines
        /// costs nothing here.
        var followed: [String: [String]] = [:]
        var followedMember: [String: String] = [:]
        /// Groups not followed here (a live daemon follows them, or they wait for the runner
        /// of their lines' batch), as last listed, and the group of each of their members.
        var elsewhere: [String: Elsewhere] = [:]
        var elsewhereMember: [String: String] = [:]
        var listedAt: Double?
        /// Records found unreadable, logged once each.
        var unreadable: Set<String> = []
    }

    /// A group not followed here: its request files, and the batch files its lines are of.
    private struct Elsewhere {
        var members: [String]
        var lineBatches: Set<String>
    }

    private let store: RemoteIntentStore
    private let leases: LeaseManager?
    private let logger: Logger
    private let state = Mutex(State())
    /// Whether this daemon's batch runner runs a batch file now (`BatchRunner.runs`).
    private let runsBatch: @Sendable (String) -> Bool

    init(store: RemoteIntentStore, leases: LeaseManager?, logger: Logger, runsBatch: @escaping @Sendable (String) -> Bool = { _ in false }) {
        self.store = store
        self.leases = leases
        self.logger = logger
        self.runsBatch = runsBatch
    }

    /// Whether this daemon's batch runner runs the batch file `name` now.
    func runs(batch name: String) -> Bool { runsBatch(name) }

    /// How often `state/remote` is looked at for groups whose follower is gone.
    var lookAgainSeconds: Double { RemoteGroupClaims.lookAgainSeconds(leaseSeconds: leases?.seconds ?? 60) }

    /// A group this daemon forms: claimed and known as followed here before its record is
    /// written, so that no look at `state/remote` takes it for an unfollowed one. False when
    /// the claim cannot be made (the group is then not formed).
    func claimNew(group: String, members: [String]) -> Bool {
        state.withLock { state in
            if let leases {
                switch leases.claim(RemoteGroupClaims.claimID(group: group)) {
                case .claimed:
                    break
                case .heldElsewhere, .failed:
                    return false
                }
            }
            follow(group, members, in: &state)
            return true
        }
    }

    /// The group ended here (or is dropped): its claim ends as a tombstone when `ended`.
    func forget(group: String, ended: Bool) {
        state.withLock { state in
            for member in state.followed.removeValue(forKey: group) ?? [] where state.followedMember[member] == group {
                state.followedMember[member] = nil
            }
        }
        leases?.release(RemoteGroupClaims.claimID(group: group), ended: ended)
    }

    /// The group's claim was found taken (this daemon was paused past its lease), or is given
    /// up for the daemon that now runs the batch its lines are of: another daemon follows it
    /// now, or adopts it at its next look. Its members are known as that daemon's group at once, as a
    /// look at `state/remote` would find them, so that a member claimed here again is let go
    /// (`.leave`) and a line of its batch waits, instead of being sent a second time.
    func lost(group: String, members allMembers: [String]) {
        state.withLock { state in
            for member in state.followed.removeValue(forKey: group) ?? [] where state.followedMember[member] == group {
                state.followedMember[member] = nil
            }
            let members = Self.claimable(allMembers)
            state.elsewhere[group] = Elsewhere(members: members, lineBatches: Set(allMembers.lazy.compactMap { BatchLineRef(id: $0)?.batch }))
            for member in members { state.elsewhereMember[member] = group }
        }
        // Another daemon's lease is not rewritten; one still this daemon's is removed, for
        // the next runner of the lines' batch to claim (`LeaseManager.release`).
        leases?.release(RemoteGroupClaims.claimID(group: group), ended: false)
    }

    /// The request of `id` is not the file `group` carries (replaced under its name): its
    /// claims are judged as any request's from now on.
    func notMember(_ id: String, of group: String) {
        state.withLock { state in
            guard state.followedMember[id] == group else { return }
            state.followedMember[id] = nil
            state.followed[group]?.removeAll { $0 == id }
        }
    }

    /// Whether a line handed over must wait, held aside, before it is grouped: a group not
    /// followed here carries lines of its batch (`RemoteGroupClaims.line`).
    func lineWaits(_ id: String) -> Bool {
        guard let line = BatchLineRef(id: id) else { return false }
        return RemoteGroupClaims.line(batchInGroupNotFollowedHere: carriedElsewhere(batch: line.batch)) == .wait
    }

    /// Whether a group not followed here (as last listed) carries lines of the batch file `batch`.
    func carriedElsewhere(batch: String) -> Bool {
        state.withLock { state in state.elsewhere.values.contains { $0.lineBatches.contains(batch) } }
    }

    /// Whether this daemon still holds `group`'s claim; nil without leases.
    func stillMine(group: String) -> Bool? {
        leases.map { $0.stillMine(RemoteGroupClaims.claimID(group: group)) }
    }

    /// A request just claimed, judged against the recorded groups; `adopted` receives the
    /// records of the groups adopted meanwhile, to be followed, before the verdict is given.
    func judge(_ id: String, tookOver: Bool, adopted: ([RemoteIntent]) -> Void) -> RemoteGroupClaims.Member {
        state.withLock { state in
            if state.followedMember[id] != nil { return .rejoin }
            if RemoteGroupClaims.mustList(tookOver: tookOver, followedElsewhere: state.elsewhereMember[id] != nil,
                                          listedAt: state.listedAt, now: Date().timeIntervalSince1970, every: lookAgainSeconds) {
                adopted(look(&state))
            }
            return RemoteGroupClaims.member(followedHere: state.followedMember[id] != nil, followedElsewhere: state.elsewhereMember[id] != nil)
        }
    }

    /// Looks at every record of `state/remote` that this daemon does not follow; returns the
    /// records of the groups it adopts (at start: its own earlier run's, and any whose
    /// follower is gone).
    func adoptUnfollowed() -> [RemoteIntent] {
        state.withLock { state in look(&state) }
    }

    /// A group's request files, which claims are judged for.
    private static func claimable(_ members: [String]) -> [String] {
        members.filter { BatchLineRef(id: $0) == nil }
    }

    private func follow(_ group: String, _ allMembers: [String], in state: inout State) {
        let members = Self.claimable(allMembers)
        state.followed[group] = members
        for member in members { state.followedMember[member] = group }
        if let others = state.elsewhere.removeValue(forKey: group) {
            for member in others.members where state.elsewhereMember[member] == group { state.elsewhereMember[member] = nil }
        }
    }

    /// Whether this daemon runs every batch file whose lines `batches` names: its runner runs
    /// the batch (not merely holds its claim), or the batch's input is gone (its lines are
    /// then discarded): `RemoteGroupClaims.runsLines`.
    private func runsLines(of batches: Set<String>) -> Bool {
        guard leases != nil else { return true }
        return batches.allSatisfy {
            RemoteGroupClaims.runsLines(runHere: runsBatch($0), inputPresent: Syscall.isPresent(store.layout.batchRequest($0)))
        }
    }

    private func look(_ state: inout State) -> [RemoteIntent] {
        let groups: [String]
        do {
            groups = try store.groups()
        } catch {
            logger.error("cannot read the background lane's records", ["folder": LogValue(store.layout.remote), "reason": "\(error)"])
            return []
        }
        state.listedAt = Date().timeIntervalSince1970
        let listed = Set(groups)
        for (group, others) in state.elsewhere where !listed.contains(group) {
            state.elsewhere[group] = nil
            for member in others.members where state.elsewhereMember[member] == group { state.elsewhereMember[member] = nil }
        }
        var adopted: [RemoteIntent] = []
        for group in groups where state.followed[group] == nil {
            let claim = leases.map { leases -> RemoteGroupClaims.Claim in
                switch leases.claim(RemoteGroupClaims.claimID(group: group)) {
                case .claimed: .claimed
                case .heldElsewhere: .heldElsewhere
                case .failed(let reason): .failed(reason)
                }
            }
            if let known = state.elsewhere[group] {
                // Known from an earlier look: its record is not read again while nothing changed.
                if case .heldElsewhere? = claim { continue }
                if claim == .claimed, !runsLines(of: known.lineBatches) {
                    leases?.release(RemoteGroupClaims.claimID(group: group), ended: false)
                    continue
                }
            }
            let intent: RemoteIntent
            switch store.load(group: group) {
            case .intent(let found):
                intent = found
                state.unreadable.remove(group)
            case .unreadable(let path, let problem):
                if claim == .claimed { leases?.release(RemoteGroupClaims.claimID(group: group), ended: false) }
                // A record removed since the listing (its group ended) is no record.
                if Syscall.isPresent(path), state.unreadable.insert(group).inserted {
                    logger.error("an intent record cannot be read; it is left in place and its group is not resumed",
                                 ["record": LogValue(path), "problem": LogValue(problem)])
                }
                continue
            }
            let lineBatches = Set(intent.members.lazy.compactMap { BatchLineRef(id: $0.id)?.batch })
            let runsItsLines = claim == .claimed ? runsLines(of: lineBatches) : true
            switch RemoteGroupClaims.found(state: intent.state, claim: claim, runsItsLines: runsItsLines) {
            case .leave, .leaveToBatchRunner:
                if claim == .claimed { leases?.release(RemoteGroupClaims.claimID(group: group), ended: false) }
                let members = Self.claimable(intent.members.map(\.id))
                state.elsewhere[group] = Elsewhere(members: members, lineBatches: lineBatches)
                for member in members { state.elsewhereMember[member] = group }
            case .retry(let reason):
                logger.warning("cannot claim a remote batch's group; will look again", ["group": LogValue(group), "reason": LogValue(reason)])
            case .formAgain:
                logger.info("a group recorded before anything remote existed is formed again", ["group": LogValue(group),
                                                                                                "requests": "\(intent.members.count)"])
                logger.bestEffort("removing a record") { try store.remove(group: group) }
                leases?.release(RemoteGroupClaims.claimID(group: group), ended: true)
            case .follow:
                follow(group, intent.members.map(\.id), in: &state)
                if leases != nil {
                    // Its claim was free: its follower (another daemon, or this host's earlier run) is gone.
                    logger.info("adopting the remote batch of a daemon that is gone", ["group": LogValue(group), "state": LogValue(intent.state.rawValue),
                                                                                      "batch": LogValue(intent.batchID ?? "unknown")])
                }
                adopted.append(intent)
            }
        }
        return adopted
    }
}
