/// How long the transfer engine's loop pauses after a turn, so that the events of many open
/// transfers gather and one turn serves several (a message from another thread ends the
/// pause at once, so a new request is not held back). Each turn costs a wake-up, a context
/// switch and the loop's bookkeeping (timers, partial flushes, the status snapshot); at
/// 2,000 streams whose events come a second apart, a turn served about one event. Pure.
public enum EventLoopPacing {
    /// Below this many open transfers the loop never pauses: a few transfers wake it rarely,
    /// and a lone stream's bytes (a large answer) should reach its file at once.
    public static let threshold = 128
    /// A turn lasts at least this long when the loop pauses: an event waits at most this
    /// much more, where a model's tokens come tens of milliseconds apart and a transfer's
    /// timers count in seconds.
    public static let turnMilliseconds = 5
    /// A turn that received this much is serving a bulk answer, which libcurl reads a
    /// buffer at a time: pausing would slow it (a 100 MiB answer beside 200 held streams
    /// took 0.32-0.52 s instead of 0.26 s). Streams' events are a few hundred bytes each.
    public static let bulkBytes = 32 * 1024

    /// The pause after a turn of `turnSeconds` (blocking in `epoll_wait` included) that
    /// received `bytesReceived`, in milliseconds: none while few transfers are open, while
    /// the daemon stops, after a bulk turn, or when the turn itself took the whole window.
    public static func pauseMilliseconds(openTransfers: Int, turnSeconds: Double, bytesReceived: Int, stopping: Bool) -> Int32 {
        guard openTransfers >= threshold, !stopping, bytesReceived < bulkBytes, turnSeconds.isFinite, turnSeconds >= 0 else { return 0 }
        let left = Double(turnMilliseconds) - turnSeconds * 1000
        return left <= 0 ? 0 : Int32(left.rounded(.up))
    }
}
