import Foundation

/// One running batch's counts, as the daemon's live status carries them to `status`,
/// `show` and `submit --wait`.
public struct BatchProgress: Sendable, Equatable {
    public var name: String
    public var total: Int
    public var succeeded: Int
    public var failed: Int
    public var inFlight: Int
    /// Seconds since 1970, when the batch was accepted.
    public var startedAt: Double
    public var updatedAt: Double
    public var cancelled: Bool
    /// Why its ended lines cannot be written now (a folder in the way of the output's name,
    /// a full disk); nil while they can. They wait in memory and are tried again.
    public var commitProblem: String?
    /// Tries in a row that failed for `commitProblem`.
    public var commitFailures = 0
    /// Why the batch, every line of it ended, cannot be published (a folder at the name of
    /// its output, summary or errors file, a full disk); nil while it is not waiting for
    /// that. Its end is tried again after a growing pause.
    public var publishProblem: String?
    /// Tries in a row that failed for `publishProblem`.
    public var publishFailures = 0
    /// Why the batch, validated, cannot be started (a folder at its journal's name, a full
    /// disk); nil once it runs. It is tried again after a growing pause.
    public var startProblem: String?
    /// Tries in a row that failed for `startProblem`.
    public var startFailures = 0

    public init(name: String, total: Int, succeeded: Int, failed: Int, inFlight: Int, startedAt: Double, updatedAt: Double, cancelled: Bool,
                commitProblem: String?, commitFailures: Int) {
        self.init(name: name, total: total, succeeded: succeeded, failed: failed, inFlight: inFlight, startedAt: startedAt,
                  updatedAt: updatedAt, cancelled: cancelled)
        self.commitProblem = commitProblem
        self.commitFailures = commitFailures
    }

    public init(name: String, total: Int, succeeded: Int, failed: Int, inFlight: Int, startedAt: Double, updatedAt: Double, cancelled: Bool) {
        self.name = name
        self.total = total
        self.succeeded = succeeded
        self.failed = failed
        self.inFlight = inFlight
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.cancelled = cancelled
    }

    public var done: Int { succeeded + failed }

    /// Lines ended per second since the batch was accepted (a resumed batch counts the
    /// lines of its earlier runs too).
    public var rate: Double {
        let seconds = updatedAt - startedAt
        return seconds > 0 ? Double(done) / seconds : 0
    }

    /// Seconds left at the current rate; nil before any line ended.
    public var eta: Double? {
        rate > 0 ? Double(max(0, total - done)) / rate : nil
    }

    /// `name: 120/1000 done (3 failed), 64 in flight, 41.2 lines/s, ETA 21 s`
    public func line() -> String {
        var text = "\(Logger.escape(name)): \(done)/\(total) done (\(failed) failed), "
        if let publishProblem {
            // Every line ended: no rate or time left to show, only what holds the end.
            return text + "ended; its end cannot be published (\(publishFailures) tries): \(Logger.escape(publishProblem))"
        }
        if let startProblem {
            return text + "not started; it cannot be started (\(startFailures) tries): \(Logger.escape(startProblem))"
        }
        text += "\(inFlight) in flight, " + String(format: "%.1f lines/s", rate)
        // A start read from a journal may be any time: an ETA past any Int is not shown. No
        // ETA either while its lines cannot be written: none of them ends meanwhile.
        if commitProblem == nil, let eta, let seconds = Self.whole(eta) { text += ", ETA \(seconds) s" }
        if cancelled { text += ", cancelling" }
        if let commitProblem {
            text += ", its lines cannot be written (\(commitFailures) tries): \(Logger.escape(commitProblem))"
        }
        return text
    }

    /// Whole seconds, or nil for a time no Int holds: a batch's start is read from its
    /// journal, which may hold any number.
    static func whole(_ seconds: Double) -> Int? {
        Int(exactly: seconds.rounded())
    }

    public func json() -> [UInt8] {
        var text = "{\"name\":"
        JSONText.appendQuoted(name, to: &text)
        text += ",\"total\":\(total),\"succeeded\":\(succeeded),\"failed\":\(failed),\"done\":\(done),\"in_flight\":\(inFlight)"
        text += ",\"started_at\":\(Self.whole(startedAt) ?? 0),\"updated_at\":\(Self.whole(updatedAt) ?? 0),\"rate\":" + String(format: "%.2f", rate)
        text += ",\"eta_seconds\":" + (eta.flatMap(Self.whole).map(String.init) ?? "null") + ",\"cancelled\":\(cancelled)"
        if let commitProblem {
            text += ",\"commit_problem\":"
            JSONText.appendQuoted(commitProblem, to: &text)
            text += ",\"commit_failures\":\(commitFailures)"
        }
        if let publishProblem {
            text += ",\"publish_problem\":"
            JSONText.appendQuoted(publishProblem, to: &text)
            text += ",\"publish_failures\":\(publishFailures)"
        }
        if let startProblem {
            text += ",\"start_problem\":"
            JSONText.appendQuoted(startProblem, to: &text)
            text += ",\"start_failures\":\(startFailures)"
        }
        text += "}"
        return Array(text.utf8)
    }

    /// What `json()` wrote, read back.
    public init?(json object: [String: Any]) {
        guard let name = object["name"] as? String, let total = object["total"] as? Int, let succeeded = object["succeeded"] as? Int,
              let failed = object["failed"] as? Int else { return nil }
        self.init(name: name, total: total, succeeded: succeeded, failed: failed, inFlight: object["in_flight"] as? Int ?? 0,
                  startedAt: (object["started_at"] as? NSNumber)?.doubleValue ?? 0, updatedAt: (object["updated_at"] as? NSNumber)?.doubleValue ?? 0,
                  cancelled: object["cancelled"] as? Bool ?? false)
        commitProblem = object["commit_problem"] as? String
        commitFailures = object["commit_failures"] as? Int ?? 0
        publishProblem = object["publish_problem"] as? String
        publishFailures = object["publish_failures"] as? Int ?? 0
        startProblem = object["start_problem"] as? String
        startFailures = object["start_failures"] as? Int ?? 0
    }
}
