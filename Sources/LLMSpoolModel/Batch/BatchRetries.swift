/// Batches held by a step that failed and is tried again: an end that could not be published
/// (a folder at the name of the output, the summary or the errors file; a full disk), a start
/// that could not be made (a folder at the journal's name). Each is looked at again after a
/// pause that doubles as a commit's does (`BatchCommitRetry`), neither every round nor only
/// at the next start or sweep, its failures are logged 1st, 2nd, 4th..., and `status` lists
/// it meanwhile with the reason. `Detail` is what the daemon shows for it.
public struct BatchRetries<Detail: Sendable>: Sendable {
    /// One batch's failures in a row and what is shown for it.
    public struct Entry: Sendable {
        public var retry: BatchCommitRetry
        public var detail: Detail
    }

    public private(set) var entries: [String: Entry] = [:]

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }

    /// The step of `name` failed at `now` for `reason`. True when the failure is one to log
    /// as an error (the 1st, 2nd, 4th... of a run).
    public mutating func failed(_ name: String, reason: String, detail: Detail, now: Double) -> Bool {
        var entry = entries[name] ?? Entry(retry: BatchCommitRetry(), detail: detail)
        entry.detail = detail
        let loud = entry.retry.failed(reason, now: now)
        entries[name] = entry
        return loud
    }

    /// `name`'s step went through: the failures in a row it ends (0 when none).
    public mutating func succeeded(_ name: String) -> Int {
        entries.removeValue(forKey: name)?.retry.failures ?? 0
    }

    /// No longer this daemon's to try (an end's journal gone: published elsewhere, or removed
    /// by hand; a start's input gone).
    public mutating func forget(_ name: String) {
        entries[name] = nil
    }

    /// The names whose pause is over at `now`, in name order. Each is held back by its pause
    /// again at once, so that a look that ends in no try at all is not repeated every round;
    /// a try that fails sets the pause from its own failure.
    public mutating func due(now: Double) -> [String] {
        let names = entries.filter { $0.value.retry.mayTry(now: now) }.keys.sorted()
        for name in names { entries[name]?.retry.postpone(now: now) }
        return names
    }

    /// The failures in a row of `name`, 0 when it is not waiting.
    public func failures(of name: String) -> Int {
        entries[name]?.retry.failures ?? 0
    }
}
