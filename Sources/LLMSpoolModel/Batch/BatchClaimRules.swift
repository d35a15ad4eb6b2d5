/// Who may run a batch on a spool several daemons share, and when: one daemon at a time,
/// the one holding the batch's claim (the same lease a single request has, under the
/// batch's own id). Its journal and output have one writer; a daemon that takes over the
/// claim of one that died resumes from the journal, which says what was committed.
public enum BatchClaimRules {
    /// What claiming the batch's lease gave.
    public enum Claim: Sendable, Equatable {
        case claimed
        case heldElsewhere
        case failed(String)
    }

    /// What the batch thread does with a batch file it found.
    public enum Intake: Sendable, Equatable {
        /// Read it and run (or resume, or finish publishing) it: this daemon holds the claim
        /// or no other daemon shares the spool.
        case run
        /// Another daemon runs it: leave it, and look again after `seconds`, in case that
        /// daemon dies and its claim can be taken over.
        case leave(lookAgainAfter: Double)
        /// The claim could not be made (an I/O error): look again after `seconds`.
        case retry(after: Double, reason: String)
    }

    /// What the batch thread does before committing a group of ended lines.
    public enum Commit: Sendable, Equatable {
        case commit
        /// The claim is no longer this daemon's (lost while paused or cut off): the batch is
        /// dropped here without a write, and its lines in flight are stopped. The daemon
        /// that holds the claim now resumes it from the journal, which has only what this
        /// daemon committed while the claim was its own.
        case abandon
    }

    /// The id a batch's claim is held under: `<name>.jsonl`, which no request file can
    /// have (ids ending in `.jsonl` are reserved for batches), so it never meets a request's.
    public static func claimID(batch name: String) -> String { name + SpoolLayout.batchSuffix }

    /// The batch's name of a claim id, or nil when the id is a request's.
    public static func batchName(ofClaim id: String) -> String? {
        guard id.hasSuffix(SpoolLayout.batchSuffix), id.count > SpoolLayout.batchSuffix.count else { return nil }
        return String(id.dropLast(SpoolLayout.batchSuffix.count))
    }

    /// How often a daemon looks again at a batch another daemon holds: a third of the lease
    /// time (as often as claims are renewed), at least once a second and at most once a minute.
    public static func lookAgainSeconds(leaseSeconds: Double) -> Double {
        guard leaseSeconds.isFinite, leaseSeconds > 0 else { return 1 }
        return min(60, max(1, leaseSeconds / 3))
    }

    /// A batch found in `outgoing`. `claim` is nil when no other daemon shares the spool
    /// (no leases): the batch is then this daemon's alone.
    public static func intake(claim: Claim?, leaseSeconds: Double) -> Intake {
        switch claim {
        case nil, .claimed?: .run
        case .heldElsewhere?: .leave(lookAgainAfter: lookAgainSeconds(leaseSeconds: leaseSeconds))
        case .failed(let reason)?: .retry(after: lookAgainSeconds(leaseSeconds: leaseSeconds), reason: reason)
        }
    }

    /// Before a group commit, and before a batch whose lines have all ended is published.
    /// `stillMine` is nil when no other daemon shares the spool.
    public static func commit(stillMine: Bool?) -> Commit {
        stillMine == false ? .abandon : .commit
    }

    /// Whether the runner has the background lane adopt the groups whose follower is gone
    /// (the batch's earlier runner may have sent lines of it in remote batches of its own),
    /// asked once it has begun or resumed the batch, before its first line is fed: when it
    /// took the claim over from a daemon that is gone (`tookOver`), or resumes the batch from
    /// its journal (`resumed`: its earlier runner may have stopped cleanly, letting the claim
    /// go at once, just after recording a group no look at `state/remote` here has seen yet).
    /// Not before it runs the batch: one it then declines (not valid yet, not readable this
    /// time, a stop) goes back to being claimed by any daemon, and a group adopted for it
    /// here would never get its lines.
    public static func adoptsLaneGroups(tookOver: Bool, resumed: Bool) -> Bool { tookOver || resumed }

    /// Whether the batch's claim ends as a tombstone when this daemon lets go of it: yes
    /// when the batch ended here (published, or refused as invalid), so that no stale view
    /// of its input is claimed again; no when the daemon stops with the batch unfinished,
    /// so that another daemon may take it over at once and resume it.
    public static func releaseEnds(batchEnded: Bool) -> Bool { batchEnded }

    /// How often a daemon that waits to run again a batch whose claim it lost says so.
    public static let abandonedLinesWarnSeconds = 600.0

    /// Whether this daemon may run again a batch whose claim it lost (the other daemon died
    /// or let it go since). The lines the lost run had in flight end through the scheduler,
    /// the background lane and the finisher, each reported back by its id (batch and line);
    /// a new run under the same name before the last of them is reported would take those
    /// reports for its own lines (a line ended `batch_cancelled` in a batch that runs on, or
    /// dropped by the scheduler as a duplicate). No time limit: a lane's thread held by an
    /// upload of hundreds of MiB can hold the last reports for longer than any limit, and
    /// other daemons may run the batch meanwhile. `outstanding`: lines not reported yet.
    public static func mayRunAgain(outstanding: Int) -> Bool {
        outstanding == 0
    }
}
