/// How long the transfer engine's loop pauses after a turn, so that the events of many open
/// transfers gather and one turn serves several (a message from another thread ends the
/// pause at once, so a new request is not held back). Each turn costs a wake-up, a context switch
/// and the loop's bookkeeping (timers, partial flushes, the status snapshot); at 2,000 streams
/// whose events come a second apart, a turn served about one event. Pure.
public enum EventLoopPacing {
    /// Below this many open transfers the loop never pauses: a few transfers wake it rarely,
    /// and a lone stream's bytes (a large answer) should reach its file at once.
    public static let threshold = 128
    /// A turn lasts at least this long when the loop pauses: an event waits at most this
    /// much more, where a model's tokens come tens of milliseconds apart and a transfer's
    /// timers count in seconds.
    public static let turnMicroseconds = 5_000

    /// The pause after a turn that took `turnMicroseconds` of work, in microseconds: none
    /// while few transfers are open, while the daemon stops, or when the turn itself took
    /// the whole window.
    public static func pause(openTransfers: Int, turnMicroseconds elapsed: Int, stopping: Bool) -> Int {
        guard openTransfers >= threshold, !stopping, elapsed >= 0 else { return 0 }
        return max(0, turnMicroseconds - elapsed)
    }
}
