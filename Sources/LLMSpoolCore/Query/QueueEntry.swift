import Foundation
import Glibc

/// One line of `llmspool queue`: a request still in the spool, not finished.
public struct QueueEntry: Sendable, Equatable {
    public var id: String
    public var state: RequestState
    public var bytes: Int64
    /// Since the daemon first saw it, else since the file arrived.
    public var since: Date
    public var attempts: Int
    public var endpoint: String?
    /// Why it is not being sent now, when it waits.
    public var reason: String?

    public static func json(_ entries: [QueueEntry]) -> [UInt8] {
        JSONObject.encode(["requests": entries.map { entry -> [String: Any] in
            var item: [String: Any] = ["id": entry.id, "state": entry.state.rawValue, "bytes": entry.bytes,
                                       "since": Timestamp.string(entry.since), "attempts": entry.attempts]
            if let endpoint = entry.endpoint { item["endpoint"] = endpoint }
            if let reason = entry.reason { item["reason"] = reason }
            return item
        }])
    }

    /// Like `postqueue -p`: one request a line, oldest first, and a count at the end.
    public static func table(_ entries: [QueueEntry], now: Date = Date()) -> String {
        guard !entries.isEmpty else { return "the queue is empty\n" }
        var lines = ["ID  STATE  BYTES  AGE  ATTEMPTS  ENDPOINT  REASON"]
        for entry in entries {
            lines.append([Logger.escape(entry.id), entry.state.rawValue, "\(entry.bytes)", age(now.timeIntervalSince(entry.since)),
                          "\(entry.attempts)", entry.endpoint ?? "-", entry.reason.map(Logger.escape) ?? "-"].joined(separator: "  "))
        }
        lines.append("\(entries.count) request\(entries.count == 1 ? "" : "s")")
        return lines.joined(separator: "\n") + "\n"
    }

    static func age(_ seconds: Double) -> String {
        let value = max(0, seconds)
        if value < 120 { return String(format: "%.0fs", value) }
        if value < 7200 { return String(format: "%.0fm", value / 60) }
        if value < 172_800 { return String(format: "%.0fh", value / 3600) }
        return String(format: "%.0fd", value / 86_400)
    }
}
