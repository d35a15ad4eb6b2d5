import Foundation
import Glibc

/// Where a request stands, as the spool's folders tell it.
public enum RequestState: String, Sendable {
    case queued
    case inFlight = "in_flight"
    case deferred
    case done
    case failed
    case cancelled
    case unknown
}

/// Everything `status` shows.
public struct StatusSummary: Sendable {
    public struct Waiting: Sendable {
        public var id: String
        public var nextAttemptAt: Date?
        public var attempts: Int
        public var lastError: String?
    }

    public var queued = 0
    public var inFlight = 0
    public var deferred = 0
    public var done = 0
    public var failed = 0
    public var tokens: [String: Int] = [:]
    public var transfers: [TransferEngine.LiveTransfer] = []
    public var waiting: [Waiting] = []
    public var daemonPID: Int32?
    /// Every live daemon on a shared spool (empty on a spool without leases).
    public var daemons: [DaemonRoster.Entry] = []

    public func json() -> [UInt8] {
        var object: [String: Any] = [
            "queued": queued, "in_flight": inFlight, "deferred": deferred, "done": done, "failed": failed,
            "tokens": tokens,
            "daemon": daemonPID.map { ["running": true, "pid": $0] as [String: Any] } ?? ["running": false],
        ]
        object["daemons"] = daemons.map {
            ["host": $0.host, "pid": Int($0.pid), "queued": $0.queued, "deferred": $0.deferred, "in_flight": $0.inFlight,
             "updated_at": Timestamp.string($0.updatedAt)] as [String: Any]
        }
        object["in_flight_requests"] = transfers.map {
            ["id": $0.id, "started_at": Timestamp.string($0.startedAt), "bytes_received": $0.bytesReceived,
             "tokens_received": $0.events, "attempt": $0.attempt, "endpoint": $0.endpoint] as [String: Any]
        }
        object["deferred_requests"] = waiting.map { entry -> [String: Any] in
            var item: [String: Any] = ["id": entry.id, "attempts": entry.attempts]
            if let next = entry.nextAttemptAt { item["next_attempt_at"] = Timestamp.string(next) }
            if let error = entry.lastError { item["last_error"] = error }
            return item
        }
        return JSONObject.encode(object)
    }

    public func text(now: Date = Date()) -> String {
        var lines = [daemonPID.map { "daemon: running (pid \($0))" } ?? (daemons.isEmpty ? "daemon: not running" : "daemons: \(daemons.count) running")]
        if !daemons.isEmpty && (daemons.count > 1 || daemonPID == nil) {
            for entry in daemons {
                lines.append("  \(Logger.escape(entry.host)) pid \(entry.pid): queued \(entry.queued)  in flight \(entry.inFlight)  waiting to retry \(entry.deferred)")
            }
        }
        lines.append("queued \(queued)  in flight \(inFlight)  waiting to retry \(deferred)  done \(done)  failed \(failed)")
        if !tokens.isEmpty {
            lines.append("tokens: " + ["prompt_tokens", "completion_tokens", "total_tokens"].compactMap { key in
                tokens[key].map { "\(key.replacingOccurrences(of: "_tokens", with: "")) \($0)" }
            }.joined(separator: "  "))
        }
        if !transfers.isEmpty {
            lines.append("in flight:")
            for transfer in transfers.sorted(by: { $0.startedAt < $1.startedAt }) {
                let elapsed = now.timeIntervalSince(transfer.startedAt)
                lines.append(String(format: "  %@  %.1fs  %lld bytes  %d tokens  attempt %d  %@", Logger.escape(transfer.id), elapsed,
                                    transfer.bytesReceived, transfer.events, transfer.attempt, transfer.endpoint))
            }
        }
        if !waiting.isEmpty {
            lines.append("waiting to retry:")
            for entry in waiting.sorted(by: { ($0.nextAttemptAt ?? .distantPast) < ($1.nextAttemptAt ?? .distantPast) }) {
                let next = entry.nextAttemptAt.map { String(format: "in %.1fs", max(0, $0.timeIntervalSince(now))) } ?? "soon"
                lines.append("  \(Logger.escape(entry.id))  next attempt \(next)  after \(entry.attempts) attempts  last error: \(entry.lastError ?? "-")")
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// Reads the spool without locking or changing anything: for `status`, `show` and `wait`.
/// It works whether or not a daemon is running.
public struct SpoolQuery: Sendable {
    public let layout: SpoolLayout

    public init(layout: SpoolLayout) {
        self.layout = layout
    }

    /// Ids of the requests in `outgoing`.
    public func outgoingIDs() -> [String] {
        ((try? Syscall.listDirectory(layout.outgoing)) ?? []).compactMap {
            if case .request(let id) = RequestName.classify($0) { return id }
            return nil
        }
    }

    public func state(of id: String, live: LiveStatus? = nil, now: Date = Date()) -> RequestState {
        if Syscall.exists(layout.request(id)) {
            if let live {
                if live.inFlight.contains(where: { $0.id == id }) { return .inFlight }
            } else if Syscall.exists(layout.partial(id)) {
                return .inFlight
            }
            if let record = TaskRecord.load(layout, id: id), record.status == .active,
               let next = record.history.notBefore, next > now {
                return .deferred
            }
            return .queued
        }
        if Syscall.exists(layout.result(id)) { return .done }
        if Syscall.exists(layout.errorRecord(id)) { return .failed }
        if TaskRecord.load(layout, id: id)?.status == .cancelled { return .cancelled }
        return .unknown
    }

    public func summary(now: Date = Date()) -> StatusSummary {
        var summary = StatusSummary()
        let live = LiveStatus.read(layout, now: now)
        summary.daemonPID = live?.pid
        summary.daemons = DaemonRoster.read(layout, now: now)
        let inFlightIDs = Set(live?.inFlight.map(\.id) ?? [])
        for id in outgoingIDs() {
            let state = self.state(of: id, live: live, now: now)
            switch state {
            case .inFlight: summary.inFlight += 1
            case .deferred:
                summary.deferred += 1
                let record = TaskRecord.load(layout, id: id)
                summary.waiting.append(.init(id: id, nextAttemptAt: record?.history.notBefore, attempts: record?.history.attempts.count ?? 0,
                                             lastError: record?.history.attempts.last?.message))
            default: summary.queued += 1
            }
        }
        summary.transfers = live?.inFlight.filter { inFlightIDs.contains($0.id) } ?? []
        for name in (try? Syscall.listDirectory(layout.incoming)) ?? [] {
            if case .request = RequestName.classify(name) { summary.done += 1 }
        }
        for name in (try? Syscall.listDirectory(layout.failed)) ?? [] where name.hasSuffix(SpoolLayout.errorRecordSuffix) && !name.hasPrefix(".") {
            summary.failed += 1
        }
        for name in (try? Syscall.listDirectory(layout.state)) ?? [] {
            guard case .request(let id) = RequestName.classify(name), let record = TaskRecord.load(layout, id: id),
                  record.status == .done, let usage = record.usage else { continue }
            for (key, value) in usage { summary.tokens[key, default: 0] += value }
        }
        return summary
    }

    /// Everything known about one request, as a JSON object.
    public func show(_ id: String, now: Date = Date()) -> [String: Any] {
        let live = LiveStatus.read(layout, now: now)
        var object: [String: Any] = ["id": id, "state": state(of: id, live: live, now: now).rawValue]
        var files: [String: String] = [:]
        for (name, path) in [("request", layout.request(id)), ("partial", layout.partial(id)), ("result", layout.result(id)),
                             ("raw_stream", layout.rawStream(id)), ("failed_request", layout.failedRequest(id)),
                             ("error_record", layout.errorRecord(id)), ("task_record", layout.taskRecord(id))] where Syscall.exists(path) {
            files[name] = path
        }
        object["files"] = files
        if let original = layout.loadOriginalName(id) { object["original_name"] = original }
        if let transfer = live?.inFlight.first(where: { $0.id == id }) {
            object["in_flight"] = ["started_at": Timestamp.string(transfer.startedAt), "bytes_received": transfer.bytesReceived,
                                   "tokens_received": transfer.events, "attempt": transfer.attempt, "endpoint": transfer.endpoint]
        }
        if let record = TaskRecord.load(layout, id: id) {
            object["first_seen"] = Timestamp.string(record.history.firstSeen)
            object["attempts"] = record.history.attempts.map(TaskRecord.encode)
            if let next = record.history.notBefore, record.status == .active { object["next_attempt_at"] = Timestamp.string(next) }
            if let endpoint = record.endpoint { object["endpoint"] = endpoint }
            if let usage = record.usage { object["usage"] = usage }
        }
        if let bytes = try? FileReader.prefix(path: layout.errorRecord(id), limit: 1 << 20), let error = JSONObject.parse(bytes) {
            object["error"] = ["kind": error["kind"] ?? NSNull(), "message": error["message"] ?? NSNull(), "http_status": error["http_status"] ?? NSNull()]
            if object["attempts"] == nil { object["attempts"] = error["attempt_log"] }
        }
        return object
    }
}
