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
        /// Looks since the last failure that tried nothing (another daemon held the batch).
        public var idleLooks = 0
        /// What failed last, in words that stay the same from try to try while the cause
        /// does (the step, the call, the path, the errno), not the reason shown.
        public var cause: String?
    }

    public private(set) var entries: [String: Entry] = [:]

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }

    /// The step of `name` failed at `now` for `reason`. True when the failure is one to log
    /// as an error: the 1st, 2nd, 4th... of a run, and one whose `cause` differs from the
    /// last one's (a folder at the summary's name once the output's is clear), which an
    /// operator would otherwise learn of only at the next power of two, minutes later.
    public mutating func failed(_ name: String, reason: String, cause: String? = nil, detail: Detail, now: Double) -> Bool {
        var entry = entries[name] ?? Entry(retry: BatchCommitRetry(), detail: detail)
        entry.detail = detail
        entry.idleLooks = 0
        let changed = cause != nil && entry.cause != nil && cause != entry.cause
        entry.cause = cause
        let loud = entry.retry.failed(reason, now: now)
        entries[name] = entry
        return loud || changed
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

    /// The names whose pause is over at `now`, in name order. Each is held back again at
    /// once, by a pause that grows with the looks that tried nothing, so that such looks (the
    /// batch held by another daemon) are not repeated every round; a try that fails sets the
    /// pause from its own failure.
    public mutating func due(now: Double) -> [String] {
        let names = entries.filter { $0.value.retry.mayTry(now: now) }.keys.sorted()
        for name in names {
            guard var entry = entries[name] else { continue }
            entry.idleLooks += 1
            entry.retry.postpone(now: now, tries: entry.retry.failures + entry.idleLooks)
            entries[name] = entry
        }
        return names
    }

    /// Holds `name`'s next look back until `time` at least (a look that took long).
    public mutating func holdBack(_ name: String, until time: Double) {
        entries[name]?.retry.holdBack(until: time)
    }

    /// Whether `name` is held and its pause is not over at `now`.
    public func isWaiting(_ name: String, now: Double) -> Bool {
        entries[name].map { !$0.retry.mayTry(now: now) } ?? false
    }

    /// The failures in a row of `name`, 0 when it is not waiting.
    public func failures(of name: String) -> Int {
        entries[name]?.retry.failures ?? 0
    }
}
