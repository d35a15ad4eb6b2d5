/// How long to wait before the next poll of a remote batch: `initial` at first, doubling
/// while nothing changes, at most `maximum`; back to `initial` when the counts move, since
/// a batch that progresses is likely to end soon. Pure.
public struct PollSchedule: Sendable, Equatable {
    public let initial: Double
    public let maximum: Double
    /// The longest wait a provider's `Retry-After` may ask for (`max_retry_after_seconds`).
    public let maximumRetryAfter: Double
    public private(set) var interval: Double
    private var lastSeen: RemoteBatchStatus?

    public init(initial: Double = 30, maximum: Double = 600, maximumRetryAfter: Double = 3600) {
        self.initial = max(1, initial)
        self.maximum = max(self.initial, maximum)
        self.maximumRetryAfter = max(0, maximumRetryAfter)
        interval = self.initial
    }

    /// The wait before the poll that follows `status`.
    public mutating func next(after status: RemoteBatchStatus) -> Double {
        defer { lastSeen = status }
        guard let lastSeen else { return interval }
        if lastSeen == status {
            interval = min(interval * 2, maximum)
        } else {
            interval = initial
        }
        return interval
    }
}
