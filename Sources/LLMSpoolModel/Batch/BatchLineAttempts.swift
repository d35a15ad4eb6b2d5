import FoundationEssentials

/// The failed attempts of a batch's line not yet ended, as its journal keeps them: a line
/// retried before a restart goes on with the attempts it has left, not a whole budget again.
///
/// Record: `a <entry> <attempts> <not-before-ms>`, appended after every failed attempt that
/// is retried, before the retry is scheduled; the last record of an entry wins, and the
/// line's committed entry makes them moot.
public struct BatchLineAttempts: Sendable, Equatable {
    /// Attempts that count against `max_attempts` (a full disk's do not).
    public var count: Int
    /// No attempt starts before this, milliseconds since 1970 (0: none).
    public var notBeforeMilliseconds: Int

    public init(count: Int, notBeforeMilliseconds: Int) {
        self.count = count
        self.notBeforeMilliseconds = notBeforeMilliseconds
    }

    static let marker = UInt8(ascii: "a")

    public static func encode(entry: Int, _ attempts: BatchLineAttempts) -> [UInt8] {
        Array("a \(entry) \(attempts.count) \(attempts.notBeforeMilliseconds)\n".utf8)
    }

    /// What a history's retry leaves to remember: the attempts that count, and its wait.
    public init(history: TaskHistory) {
        count = RetryPolicy.countedAttempts(history)
        let milliseconds = (history.notBefore?.timeIntervalSince1970 ?? 0) * 1000
        notBeforeMilliseconds = milliseconds.isFinite && milliseconds > 0 && milliseconds < 1e15 ? Int(milliseconds.rounded(.up)) : 0
    }

    /// The history a restarted line starts from: one entry per attempt made before the
    /// restart (their details are gone with the daemon that made them), and their wait.
    /// More than `maxAttempts` would change nothing: a number from the journal never makes a
    /// longer history.
    public func history(firstSeen: Date, maxAttempts: Int) -> TaskHistory {
        let made = Swift.min(Swift.max(0, count), Swift.max(0, maxAttempts))
        let entry = AttemptEntry(startedAt: firstSeen, endedAt: firstSeen, endpoint: "", outcome: "before-restart",
                                 message: "an attempt before the daemon restarted")
        let notBefore = notBeforeMilliseconds > 0 ? Date(timeIntervalSince1970: Double(notBeforeMilliseconds) / 1000) : nil
        return TaskHistory(firstSeen: firstSeen, attempts: Array(repeating: entry, count: made), notBefore: notBefore)
    }
}
