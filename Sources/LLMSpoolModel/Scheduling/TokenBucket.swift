/// A token bucket refilled continuously at `perMinute`, holding at most `perMinute`.
/// Pure: time is passed in. A take larger than the level leaves a debt that later waits
/// repay, so one oversized request cannot block the bucket for ever.
public struct TokenBucket: Sendable, Equatable {
    public let perMinute: Double
    public private(set) var level: Double
    private var updatedAt: Double

    public init(perMinute: Double, now: Double) {
        self.perMinute = perMinute
        self.level = perMinute
        self.updatedAt = now
    }

    private mutating func refill(_ now: Double) {
        guard now > updatedAt else { return }
        level = min(perMinute, level + (now - updatedAt) * perMinute / 60)
        updatedAt = now
    }

    /// Seconds until `amount` may be taken (0: now).
    public mutating func wait(for amount: Double, now: Double) -> Double {
        refill(now)
        let needed = min(amount, perMinute)
        return level >= needed ? 0 : (needed - level) * 60 / perMinute
    }

    /// A request estimated above a minute's budget costs one minute's budget, as `wait`
    /// lets it go once the bucket is full: one absurd `max_tokens` (2e9, refused by the
    /// provider anyway) put the bucket into a debt of weeks, and every request of the
    /// endpoint waited that long.
    public mutating func take(_ amount: Double, now: Double) {
        refill(now)
        level -= min(max(amount, 0), perMinute)
    }
}
