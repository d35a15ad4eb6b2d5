/// When a batch whose ended lines could not be written tries again, and which failures are
/// logged. The lines wait in memory meanwhile (they stay in the batch's window, so no more
/// of its lines are sent); a write that keeps failing (a folder in the way of the output's
/// name, a full disk) is tried after a growing pause, not every round: each try may copy
/// the whole output beside its name first.
public struct BatchCommitRetry: Sendable, Equatable {
    private var run = FailureRun()
    /// Failures in a row since the last commit that went through.
    public var failures: Int { run.count }
    /// The latest failure's reason; nil once a commit goes through.
    public private(set) var problem: String?
    /// The time before which no commit is tried, on the clock `now` is given in (the daemon's
    /// monotonic one: a wall clock set back would hold commits back as long).
    public private(set) var notBefore: Double = 0

    public static let firstDelaySeconds = 0.2
    public static let longestDelaySeconds = 30.0

    public init() {}

    /// Whether a commit may be tried at `now`.
    public func mayTry(now: Double) -> Bool {
        now >= notBefore
    }

    /// Records a failure at `now`. True when it is to be logged as an error (`FailureRun`:
    /// a reason may name a temporary file, so a change of text says nothing).
    public mutating func failed(_ reason: String, now: Double) -> Bool {
        let loud = run.failed()
        problem = reason
        notBefore = now + Self.delay(afterFailures: failures)
        return loud
    }

    /// Holds the next try back by the pause after `tries` (at least the first pause), without
    /// counting a failure: a look that tried nothing (another daemon held the batch, its input
    /// could not be read this time) is not repeated every round.
    public mutating func postpone(now: Double, tries: Int) {
        notBefore = now + Self.delay(afterFailures: max(1, tries))
    }

    /// No try before `time`, whatever the pause says (one that cost long to make).
    public mutating func holdBack(until time: Double) {
        notBefore = max(notBefore, time)
    }

    /// Records a commit that went through; the failures in a row it ends.
    public mutating func succeeded() -> Int {
        defer { self = BatchCommitRetry() }
        return failures
    }

    /// The pause after `failures` failures in a row: 0.2 s doubled each time, 30 s at most.
    public static func delay(afterFailures failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        var delay = firstDelaySeconds
        for _ in 1..<min(failures, 64) where delay < longestDelaySeconds { delay *= 2 }
        return min(delay, longestDelaySeconds)
    }
}
