/// When a running daemon ends a batch whose journal has been left without a runner: its
/// input left `outgoing` while no daemon ran it (its owner was killed and the input then
/// deleted; an end whose publication failed), so no cancellation and no takeover will come.
/// Every daemon looks for such journals, not only one that starts. Pure.
public enum BatchOrphanRules {
    /// What a daemon does with one journal it found in `state/batches`.
    public enum Action: Sendable, Equatable {
        /// Not an orphan: its input is there (a runner has it or will take it), or this
        /// daemon runs it (a removal reaches it as a cancellation).
        case leave
        /// An orphan, but another daemon holds its claim (it runs or ends it now): looked
        /// at again on the next sweep, in case that daemon dies.
        case lookAgain
        /// An orphan whose claim this daemon holds (or the spool is not shared): end it,
        /// cancelled with the lines it committed, or published when they were all committed.
        case end
    }

    /// `claim` is nil when it was not asked for: the spool is not shared, or the journal
    /// is no orphan (checked first, so that a batch with its input costs no claim).
    public static func action(inputPresent: Bool, runningHere: Bool, claim: BatchClaimRules.Claim?) -> Action {
        guard !inputPresent, !runningHere else { return .leave }
        switch claim {
        case nil, .claimed?: return .end
        case .heldElsewhere?, .failed?: return .lookAgain
        }
    }

    /// Whether the claim must be asked for before the journal is ended.
    public static func needsClaim(inputPresent: Bool, runningHere: Bool, shared: Bool) -> Bool {
        shared && !inputPresent && !runningHere
    }

    /// Seconds between sweeps: on a shared spool as often as a batch another daemon holds
    /// is looked at (a dead owner's orphan is ended about when its claim can be taken
    /// over); alone, once a minute (a removal seen by the watcher sweeps at once).
    public static func sweepSeconds(leaseSeconds: Double, shared: Bool) -> Double {
        shared ? BatchClaimRules.lookAgainSeconds(leaseSeconds: leaseSeconds) : 60
    }
}
