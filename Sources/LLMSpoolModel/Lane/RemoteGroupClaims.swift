/// Who follows a group's remote batch on a spool several daemons share: one daemon at a
/// time, the one holding the group's claim (the lease a request has, under an id of the
/// group's own). A daemon that dies leaves the claim to be taken over, and the taker adopts
/// the group as a restart on its records would: it follows the batch to its end and
/// publishes each member once, and never sends a member again, live or in a group of its own.
public enum RemoteGroupClaims {
    /// What claiming a group's lease gave.
    public enum Claim: Sendable, Equatable {
        case claimed
        case heldElsewhere
        case failed(String)
    }

    /// The id a group's claim is held under (`SpoolLayout.remoteGroupClaimID`): hidden, as no
    /// request's id can be, so it never meets a request's claim.
    public static func claimID(group: String) -> String { SpoolLayout.remoteGroupClaimID(group) }

    /// The group of a claim id, or nil when the id is not a group's.
    public static func group(ofClaim id: String) -> String? {
        let prefix = SpoolLayout.remoteGroupClaimPrefix
        guard id.hasPrefix(prefix), id.count > prefix.count else { return nil }
        return String(id.dropFirst(prefix.count))
    }

    /// What a daemon does with a record in `state/remote` that it does not follow yet.
    public enum Found: Sendable, Equatable {
        /// Follow the group from where its record stands (resume, or adopt a dead daemon's).
        case follow
        /// Nothing remote exists (recorded as an intent) or every member is published: the
        /// record goes, and the members are grouped again as they are found.
        case formAgain
        /// A live daemon follows it: its record and its members are that daemon's.
        case leave
        /// Its follower is gone, but it carries lines of a batch file another daemon runs (or
        /// none yet): a line's answer can only go to its batch's runner, so that runner adopts
        /// it; the claim just taken is let go, and its members are left as a live daemon's.
        case leaveToBatchRunner
        /// The claim could not be made (an I/O error): looked at again later.
        case retry(reason: String)
    }

    /// A record found. `claim` is nil when no other daemon shares the spool (no leases):
    /// every record is then this daemon's. `runsItsLines`: this daemon holds the claim of
    /// every batch file whose lines are members (or that batch's input is gone, and its
    /// lines are discarded when the group ends), as it does when the group has none.
    public static func found(state: RemoteBatchState, claim: Claim?, runsItsLines: Bool = true) -> Found {
        switch claim {
        case nil:
            state == .intent || state == .published ? .formAgain : .follow
        case .claimed?:
            // Nothing remote to follow: whoever finds it may remove it.
            if state == .intent || state == .published { .formAgain } else { runsItsLines ? .follow : .leaveToBatchRunner }
        case .heldElsewhere?:
            .leave
        case .failed(let reason)?:
            .retry(reason: reason)
        }
    }

    /// Whether this daemon runs the lines of a batch file that a group carries, for
    /// `found`'s `runsItsLines`: its runner runs that batch here (read, validated, and
    /// begun or resumed), or the batch's input is gone (its lines are discarded when the
    /// group ends). Holding the batch's claim is not enough: a runner claims a batch to look
    /// at it and lets the claim go again when it does not run it (not valid yet, not readable
    /// this time, a stop), and a group adopted meanwhile would be followed by a daemon that
    /// never feeds its lines, while the batch's next runner holds them aside for that group.
    public static func runsLines(runHere: Bool, inputPresent: Bool) -> Bool {
        runHere || !inputPresent
    }

    /// What becomes of a request this daemon has just claimed, judged against the groups
    /// recorded in `state/remote` (after adopting any whose follower is gone).
    public enum Member: Sendable, Equatable {
        /// A member of no recorded group: it goes on as the scheduler decided.
        case proceed
        /// A member of a group this daemon follows: it goes back to that group's batch, never
        /// live nor into a new group (it would be paid twice).
        case rejoin
        /// A member of a group a live daemon follows: the claim is let go, and that daemon
        /// takes the request when it looks again.
        case leave
    }

    public static func member(followedHere: Bool, followedElsewhere: Bool) -> Member {
        if followedHere { return .rejoin }
        return followedElsewhere ? .leave : .proceed
    }

    /// What becomes of a member this daemon holds when its group's claim is found taken by
    /// another daemon (this one was paused past its lease): the group's answer will not come
    /// here, and the new follower publishes it only once it holds every member.
    public enum AfterLoss: Sendable, Equatable {
        /// A request file: its claim is let go, not ended, so that the new follower can take
        /// it (kept and renewed here, it would hold that follower's publication forever).
        case letClaimGo
        /// A batch file's line (it has no claim of its own): it goes back to its batch, whose
        /// runner retries it, or ends it when the batch no longer runs here. Finalized with
        /// no outcome, it would hold its batch forever.
        case backToBatch
    }

    public static func afterLoss(isLine: Bool) -> AfterLoss {
        isLine ? .backToBatch : .letClaimGo
    }

    /// What becomes of a group followed here that carries lines of a batch whose claim this
    /// daemon just lost (it was paused past its lease; another daemon resumes the batch from
    /// its journal and holds its lines aside for the group that carries them).
    public enum AfterBatchLost: Sendable, Equatable {
        /// The group is let go for the batch's next runner to adopt: its claim is given up, and
        /// the lines held here end as their runner withdraws them. Cancelled here instead, its
        /// answers would be lost and the lines grouped again by the next runner: paid twice.
        case letGroupGo
        /// Its lines end as their runner withdraws them, cancelled, and the remote batch is
        /// cancelled once no member is wanted: the group also carries what still runs here
        /// (a request file, or lines of a batch run here: a group recorded before groups were
        /// kept per batch file), or the input in `outgoing` is no longer the one its lines
        /// were read from (its next runner would discard their answers).
        case endItsLines
    }

    /// `onlyLinesOfBatchesNotRunHere`: every member is a line of the lost batch or of another
    /// batch whose input is gone; `input`: the lost batch's input in `outgoing` now against the one
    /// the group's lines were read from (one that cannot be looked at counts as the same: the
    /// group is let go rather than cancelled).
    public static func afterBatchLost(onlyLinesOfBatchesNotRunHere: Bool, input: LaneLineFate.Input) -> AfterBatchLost {
        onlyLinesOfBatchesNotRunHere && input != .changed ? .letGroupGo : .endItsLines
    }

    /// Whether a group's step is taken now, on a spool several daemons share.
    public enum StepGate: Sendable, Equatable {
        case go
        /// Asked again after `seconds`.
        case wait(seconds: Double)
        /// The group's claim is not this daemon's any more: the group is another's now.
        case lost
    }

    /// The steps that make or change something remote: an upload, a create, a cancel.
    public static func changesRemote(_ step: RemoteBatchMachine.Step) -> Bool {
        switch step {
        case .upload, .create, .cancel: true
        case .list, .inspect, .poll, .download, .split, .publish: false
        }
    }

    /// A step that changes something remote is taken only under the group's claim. A daemon
    /// paused past its lease (SIGSTOP, a suspended machine) wakes before its keeper has
    /// looked, and another daemon may have adopted the group meanwhile: a create now would
    /// make a second remote batch (paid twice), a cancel would cancel the adopter's. So, as
    /// a batch's line waits (`BatchLineStart`), such a step waits while the claim's lease, as
    /// this daemon last wrote it, has expired by its clock: until the keeper has renewed it
    /// (the step goes) or found it taken (the group is lost). A claim no longer held is lost
    /// at once. `shared`: other daemons share the spool; `held`: this daemon holds the
    /// group's claim (in memory); `leaseExpiresAt` as `BatchLineStart.decide` takes it.
    public static func stepGate(_ step: RemoteBatchMachine.Step, shared: Bool, held: Bool, leaseFilesOnly: Bool,
                                leaseExpiresAt: Double?, now: Double) -> StepGate {
        guard shared, changesRemote(step) else { return .go }
        guard held else { return .lost }
        switch BatchLineStart.decide(leaseFilesOnly: leaseFilesOnly, leaseExpiresAt: leaseExpiresAt, now: now) {
        case .start: return .go
        case .wait(let seconds): return .wait(seconds: seconds)
        }
    }

    /// What the lane does with a batch file's line handed to it (from the runner that holds
    /// the batch's claim) that is in no group it follows.
    public enum Line: Sendable, Equatable {
        /// Grouped (or sent live) as any line.
        case join
        /// Held aside: a group not followed here carries lines of its batch, and is about to
        /// be adopted (its follower died; its claim, with lease files, may outlive the
        /// batch's by a renewal's interval). Grouped now, the line would be paid twice.
        case wait
    }

    public static func line(batchInGroupNotFollowedHere: Bool) -> Line {
        batchInGroupNotFollowedHere ? .wait : .join
    }

    /// Where a batch file's line goes when its runner feeds it. A request is judged against
    /// the groups when it is claimed (`member`); a line has no claim of its own, so its
    /// runner asks, as it feeds it, whether a group not followed here carries lines of its
    /// batch (the same membership `line` reads).
    public enum LineFed: Sendable, Equatable {
        /// As the configuration routes it: live, or into the background lane to be grouped.
        case asRouted
        /// Into the background lane whatever its route (a reload to `"batch": false`, or a
        /// taker whose config differs from the daemon that grouped the line): there it is
        /// held aside (`line`) until that group is adopted here, and then goes back to it
        /// when it is a member, or its route when it is not. Sent live meanwhile, it would be
        /// answered twice and paid twice: live, and by that group's remote batch.
        case toItsGroup
    }

    /// `firstAttempt`: the line has no attempt journalled. One that has is carried by no
    /// group (its group handed its outcome over, or it was never grouped: only a first
    /// attempt is), and goes as routed, as a request's claim does (`LeaseClaimer`).
    public static func lineFed(firstAttempt: Bool, batchInGroupNotFollowedHere: Bool) -> LineFed {
        firstAttempt && batchInGroupNotFollowedHere ? .toItsGroup : .asRouted
    }

    /// Whether `state/remote` is listed again before a claim is judged: after a takeover (a
    /// daemon that died may have recorded a group since the last listing), when the last
    /// listing puts the request in another daemon's group (that group may have ended since:
    /// a request is never left on an old listing's word), and when the last listing is
    /// older than `every` seconds (or there is none).
    public static func mustList(tookOver: Bool, followedElsewhere: Bool, listedAt: Double?, now: Double, every: Double) -> Bool {
        guard let listedAt else { return true }
        return tookOver || followedElsewhere || now - listedAt >= every
    }

    /// Whether the lane removes a group's record at its end: only under the group's claim,
    /// since a daemon that lost it (paused past its lease) would remove the record its new
    /// follower works from. `stillMine` is nil when no other daemon shares the spool.
    public static func mayRemoveRecord(stillMine: Bool?) -> Bool { stillMine != false }

    /// How often a daemon looks for groups whose follower is gone: as often as a batch file's
    /// claim is looked at again (a third of the lease time, 1 to 60 s).
    public static func lookAgainSeconds(leaseSeconds: Double) -> Double {
        BatchClaimRules.lookAgainSeconds(leaseSeconds: leaseSeconds)
    }
}
