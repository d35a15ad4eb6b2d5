/// Whether a batch's line may start its transfer now, on a spool several daemons share
/// through lease files alone. Pure.
///
/// A daemon learns that its batch's claim was taken only at its next renewal or group
/// commit. One paused past its lease time (SIGSTOP, a suspended machine) wakes with lines
/// queued and slots freeing as its answered lines end, and would send those lines before it
/// learns. So a line starts only while the claim's lease, as this daemon last wrote it, has
/// not expired by this daemon's clock. Past that it waits a moment: until the keeper has
/// renewed the lease (the line then goes) or found it taken (the batch is then dropped
/// here, and the line with it). Locks need no such wait: a paused daemon keeps its lock,
/// and with it the claim.
public enum BatchLineStart {
    public enum Decision: Sendable, Equatable {
        case start
        /// Asked again after `seconds`.
        case wait(seconds: Double)
    }

    /// How long a line waits before it is looked at again.
    public static let waitSeconds = 0.2

    /// `leaseExpiresAt` is when the claim's lease expires as this daemon last wrote it
    /// (nil when it holds no such claim: lost, or never made); `leaseFilesOnly` is false
    /// when the spool is not shared or its claims are held under locks.
    public static func decide(leaseFilesOnly: Bool, leaseExpiresAt: Double?, now: Double) -> Decision {
        guard leaseFilesOnly else { return .start }
        guard let expires = leaseExpiresAt, expires.isFinite, now < expires else { return .wait(seconds: waitSeconds) }
        return .start
    }

    /// Whether a line that passed its last check, under a lease that expires at
    /// `checkedUntil`, may have been sent after that time: libcurl sends the request after the
    /// check returns, within the same call, so a call that returned at or past the lease time
    /// was paused or starved somewhere in between (SIGSTOP, a suspended machine). No check
    /// can close that window; this tells of it. Never for claims held under locks.
    public static func mayHaveGoneLate(leaseFilesOnly: Bool, checkedUntil: Double, returnedAt: Double) -> Bool {
        leaseFilesOnly && !(returnedAt < checkedUntil)
    }
}
