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

    public mutating func take(_ amount: Double, now: Double) {
        refill(now)
        level -= amount
    }
}
