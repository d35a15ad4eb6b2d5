import Synchronization

/// What `status` counts over finished requests: results, failures and the tokens of the
/// results. Reading every record took seconds on a large spool (9.6 s with 50,000), so the
/// daemon counts once at start, adds what it finishes, and keeps the sums in its live status.
public struct SpoolTotals: Sendable, Equatable {
    public var done = 0
    public var failed = 0
    public var tokens: [String: Int] = [:]
    /// The part of `tokens` answered through the background lane (billed at the batch rate).
    public var batchTokens: [String: Int] = [:]

    public init(done: Int = 0, failed: Int = 0, tokens: [String: Int] = [:], batchTokens: [String: Int] = [:]) {
        self.done = done
        self.failed = failed
        self.tokens = tokens
        self.batchTokens = batchTokens
    }

    /// `self` plus what happened between `before` and `after` (two readings of the daemon's counters).
    public func adding(from before: SpoolTotals, to after: SpoolTotals) -> SpoolTotals {
        var sum = self
        sum.done = TokenCount.sum(done, after.done - before.done)
        sum.failed = TokenCount.sum(failed, after.failed - before.failed)
        for (key, value) in after.tokens {
            sum.tokens[key] = TokenCount.sum(tokens[key, default: 0], TokenCount.sum(value, -(before.tokens[key] ?? 0)))
        }
        for (key, value) in after.batchTokens {
            sum.batchTokens[key] = TokenCount.sum(batchTokens[key, default: 0], TokenCount.sum(value, -(before.batchTokens[key] ?? 0)))
        }
        return sum
    }
}

/// The count at start, taken on a thread of its own, and the daemon's counters then.
final class TotalsKeeper: Sendable {
    private let baseline = Mutex<(counted: SpoolTotals, countersThen: SpoolTotals)?>(nil)

    func start(query: SpoolQuery, metrics: Metrics) {
        NamedThread.start("totals") { [self] in
            let countersThen = metrics.finishedTotals()
            let counted = query.finishedTotals()
            baseline.withLock { $0 = (counted, countersThen) }
        }
    }

    /// Nil until the count at start is done; `status` then counts by itself.
    func current(_ metrics: Metrics) -> SpoolTotals? {
        guard let base = baseline.withLock({ $0 }) else { return nil }
        return base.counted.adding(from: base.countersThen, to: metrics.finishedTotals())
    }
}
