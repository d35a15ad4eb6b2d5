/// Failures of one repeated task in a row (a file rewritten each second, a commit tried
/// again), and which of them to log: the 1st, 2nd, 4th, 8th... so that a failure lasting
/// hours logs a few dozen lines, not one a try (a full disk under a status file rewritten
/// each second logged 3,600 lines an hour).
public struct FailureRun: Sendable, Equatable {
    /// Failures in a row since the last success.
    public private(set) var count = 0

    public init() {}

    /// Records a failure; true when it is one to log.
    public mutating func failed() -> Bool {
        count += 1
        return count & (count - 1) == 0
    }

    /// Records a success; the failures in a row it ends (0 when there were none).
    public mutating func succeeded() -> Int {
        defer { count = 0 }
        return count
    }
}
