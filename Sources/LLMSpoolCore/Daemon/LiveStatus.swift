import Foundation
import Glibc

/// `state/.daemon.json`: what a running daemon is doing, rewritten about once a second so
/// that `llmspool status` can show transfers in flight without asking the daemon anything.
/// A file older than a few seconds, or whose pid is gone, means no daemon is running.
public struct LiveStatus: Sendable, Equatable {
    public var pid: Int32
    public var updatedAt: Date
    public var queued: Int
    public var deferred: Int
    public var inFlight: [TransferEngine.LiveTransfer]

    /// Hidden: ids never start with a dot, so no task record can take this name.
    public static let fileName = ".daemon.json"
    public static let staleAfterSeconds = 5.0

    public static func path(_ layout: SpoolLayout) -> String { "\(layout.state)/\(fileName)" }

    public func encoded() -> [UInt8] {
        JSONObject.encode([
            "pid": pid,
            "updated_at": Timestamp.string(updatedAt),
            "queued": queued,
            "deferred": deferred,
            "in_flight": inFlight.map {
                ["id": $0.id, "started_at": Timestamp.string($0.startedAt), "bytes_received": $0.bytesReceived,
                 "events": $0.events, "attempt": $0.attempt, "endpoint": $0.endpoint] as [String: Any]
            },
        ] as [String: Any])
    }

    /// The running daemon's status, or nil when none is running.
    public static func read(_ layout: SpoolLayout, now: Date = Date()) -> LiveStatus? {
        guard let bytes = try? FileReader.prefix(path: path(layout), limit: 64 << 20),
              let object = JSONObject.parse(bytes),
              let pid = (object["pid"] as? NSNumber)?.int32Value,
              let updated = (object["updated_at"] as? String).flatMap(Timestamp.date),
              now.timeIntervalSince(updated) < staleAfterSeconds,
              kill(pid, 0) == 0 || errno == EPERM else { return nil }
        let live = (object["in_flight"] as? [[String: Any]] ?? []).compactMap { entry -> TransferEngine.LiveTransfer? in
            guard let id = entry["id"] as? String, let started = (entry["started_at"] as? String).flatMap(Timestamp.date) else { return nil }
            return TransferEngine.LiveTransfer(id: id, startedAt: started, bytesReceived: (entry["bytes_received"] as? NSNumber)?.int64Value ?? 0,
                                               events: entry["events"] as? Int ?? 0, attempt: entry["attempt"] as? Int ?? 1,
                                               endpoint: entry["endpoint"] as? String ?? "")
        }
        return LiveStatus(pid: pid, updatedAt: updated, queued: object["queued"] as? Int ?? 0,
                          deferred: object["deferred"] as? Int ?? 0, inFlight: live)
    }
}
