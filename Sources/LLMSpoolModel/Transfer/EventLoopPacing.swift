/// How long the transfer engine's loop pauses after a turn, so that the events of many open
/// transfers gather and one turn serves several (a message from another thread ends the
/// pause at once, so a new request is not held back). Each turn costs a wake-up, a context
/// switch and the loop's bookkeeping (timers, partial flushes, the status snapshot); at
/// 2,000 streams whose events come a second apart, a turn served about one event. Pure: the
/// engine tells it what each turn carried and when it ended, and it answers with the pause,
/// keeping the one thing it remembers between turns (when the last bulk turn ended).
public struct EventLoopPacing: Sendable {
    /// Below this many open transfers the loop never pauses: a few transfers wake it rarely,
    /// and a lone stream's bytes (a large answer) should reach its file at once.
    public static let threshold = 128
    /// A turn lasts at least this long when the loop pauses: an event waits at most this
    /// much more, where a model's tokens come tens of milliseconds apart, a transfer's
    /// timers count in seconds and a person reading a `.partial` sees nothing below 100 ms.
    /// Longer than the 5 ms first tried because libcurl 7.88 runs every stream of an HTTP/2
    /// connection when its socket is readable: what a turn costs grows with the streams a
    /// connection carries, and a longer turn gathers more of their frames into one read
    /// (5,000 streams over 50 connections: 1.10-1.12 ms of CPU per request at 5 ms,
    /// 0.97-0.99 at 20 ms, 0.89-0.92 at 40 ms).
    public static let turnMilliseconds = 40
    /// A transfer that received this much in one turn is a bulk answer, which libcurl reads
    /// a buffer at a time: pausing would slow it (a 100 MiB answer beside 200 held streams
    /// took 0.32-0.52 s instead of 0.26 s). A stream's events are a few hundred bytes each;
    /// counted per transfer, so that thousands of streams together are not taken for one.
    public static let bulkBytes = 32 * 1024
    /// After a turn that served a bulk answer the loop does not pause for this long: a
    /// bulk answer's turns are not all full (the sender's writes come in bursts), and each
    /// pause in the middle of one would hold it back a whole turn (the 100 MiB answer took
    /// 0.37-0.42 s with 40 ms turns when only the full turns counted).
    public static let bulkQuietSeconds = 0.25

    /// When the last turn that served a bulk answer ended, on the engine's monotonic clock.
    public private(set) var lastBulkTurnEnded = -Double.infinity
    /// Whether a transfer reached `bulkBytes` during the turn under way.
    public private(set) var bulkThisTurn = false

    public init() {}

    /// One transfer has received `bytes` so far in the turn under way (the sum of its
    /// flushes this turn, not one flush: a transfer may be flushed twice in a turn).
    public mutating func transferReceived(turnBytes bytes: Int) {
        if bytes >= Self.bulkBytes { bulkThisTurn = true }
    }

    /// Ends the turn that started at `started` and ended at `ended` (seconds, monotonic,
    /// blocking in `epoll_wait` included) and returns the pause before the next, in
    /// milliseconds as `poll` takes them: none while few transfers are open, while the
    /// daemon stops, in a turn that served a bulk answer or within `bulkQuietSeconds` of
    /// one, when the turn itself took the whole window, or when the clock gives no number.
    public mutating func endTurn(started: Double, ended: Double, openTransfers: Int, stopping: Bool) -> Int32 {
        if bulkThisTurn { lastBulkTurnEnded = ended }
        bulkThisTurn = false
        let turnSeconds = ended - started
        let sinceBulk = ended - lastBulkTurnEnded
        // A clock that went back (a negative span) or gives no number (NaN) fails these
        // comparisons: no reason to sleep.
        guard openTransfers >= Self.threshold, !stopping, sinceBulk >= Self.bulkQuietSeconds,
              turnSeconds.isFinite, turnSeconds >= 0 else { return 0 }
        let left = Double(Self.turnMilliseconds) - turnSeconds * 1000
        return left <= 0 ? 0 : Int32(left.rounded(.up))
    }
}
