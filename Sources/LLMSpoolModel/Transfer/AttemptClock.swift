/// The two timers of one attempt: an idle timer that only content resets, and a total
/// deadline. Pure: the time is passed in. (The connect timer is libcurl's.)
public struct AttemptClock: Sendable, Equatable {
    public let startedAt: Double
    public private(set) var lastContent: Double

    public init(startedAt: Double) {
        self.startedAt = startedAt
        self.lastContent = startedAt
    }

    /// Content arrived: an SSE data event, or any byte of a plain answer. Never call this
    /// for SSE comments or keep-alives, or a stalled stream would never time out.
    public mutating func contentArrived(at now: Double) {
        lastContent = max(lastContent, now)
    }

    /// Which timer has fired by `now`, if any; the total deadline wins a tie.
    public func expired(at now: Double, idleLimit: Double, totalLimit: Double) -> AttemptFailure.Timer? {
        if now - startedAt >= totalLimit { return .total }
        if now - lastContent >= idleLimit { return .idle }
        return nil
    }

    public func idleSeconds(at now: Double) -> Double { now - lastContent }
}
