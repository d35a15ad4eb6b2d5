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
    /// The daemon's counts of finished requests; nil while it is still counting at start.
    public var totals: SpoolTotals?
    /// Endpoints that take no request now, and why; `endpointCount` says how many it has.
    public var endpointWaits: [TransferEngine.NamedEndpointWait] = []
    public var endpointCount = 0
    /// Every endpoint in fallback order with its slots and wait, and the daemon's own limit:
    /// what `RequestWaitJudge` needs to say which requests wait and why.
    public var endpoints: [RequestWaitJudge.EndpointView] = []
    public var concurrency = 0

    /// Why a request that could go now does not: every endpoint waits (nil when one could
    /// take it, and the request waits only for a free slot).
    public var queueWait: String? {
        guard endpointCount > 0, endpointWaits.count >= endpointCount else { return nil }
        return endpointWaits.map(\.message).joined(separator: "; ")
    }

    /// When the earliest endpoint wait ends, if every endpoint waits.
    public var endpointsFreeAt: Date? {
        guard endpointCount > 0, endpointWaits.count >= endpointCount, let first = endpointWaits.map(\.wait.until).min() else { return nil }
        return Date(timeIntervalSince1970: first)
    }
    /// The batches running, with their counts.
    public var batches: [BatchProgress] = []
    /// The background lane's remote batches, with the provider's counts at the last poll.
    public var remoteBatches: [BackgroundLane.Progress] = []
    /// Why intake reads no new file now (the disk's floor); nil while it runs.
    public var intakePaused: String?

    /// Hidden: ids never start with a dot, so no task record can take this name.
    public static let fileName = ".daemon.json"
    public static let staleAfterSeconds = 5.0

    /// Written less than `staleAfterSeconds` ago. A time as far ahead is no fresher: the
    /// clock was stepped back since a daemon wrote it (and died), which would otherwise
    /// make it look alive until that time comes.
    static func isFresh(_ updated: Date, now: Date) -> Bool {
        abs(now.timeIntervalSince(updated)) < staleAfterSeconds
    }

    public static func path(_ layout: SpoolLayout) -> String { layout.liveStatus }

    /// Written by hand, not through JSONSerialization: with thousands of streams in flight
    /// the file is rewritten every second, and Foundation's encoder cost tens of
    /// milliseconds a time.
    public func encoded() -> [UInt8] {
        var text = "{\"pid\":\(pid),\"updated_at\":\"\(Timestamp.string(updatedAt))\",\"queued\":\(queued),\"deferred\":\(deferred),\"in_flight\":["
        text.reserveCapacity(text.utf8.count + inFlight.count * 160)
        for (index, transfer) in inFlight.enumerated() {
            if index > 0 { text += "," }
            text += "\n{\"id\":"
            JSONText.appendQuoted(transfer.id, to: &text)
            text += ",\"started_at\":\"\(Timestamp.string(transfer.startedAt))\",\"bytes_received\":\(transfer.bytesReceived)"
            text += ",\"events\":\(transfer.events),\"attempt\":\(transfer.attempt),\"endpoint\":"
            JSONText.appendQuoted(transfer.endpoint, to: &text)
            text += "}"
        }
        text += "],\"endpoints\":\(endpointCount),\"endpoint_waits\":["
        for (index, named) in endpointWaits.enumerated() {
            if index > 0 { text += "," }
            text += "{\"endpoint\":"
            JSONText.appendQuoted(named.endpoint, to: &text)
            text += ",\"cause\":\"\(named.wait.cause.rawValue)\",\"until\":\(named.wait.until)"
            if let failures = named.wait.failures { text += ",\"failures\":\(failures)" }
            text += ",\"message\":"
            JSONText.appendQuoted(named.message, to: &text)
            text += "}"
        }
        text += "],\"concurrency\":\(concurrency),\"endpoint_list\":["
        for (index, view) in endpoints.enumerated() {
            if index > 0 { text += "," }
            text += "{\"name\":"
            JSONText.appendQuoted(view.name, to: &text)
            text += ",\"api\":\"\(view.api.rawValue)\",\"concurrency\":\(view.concurrency),\"in_flight\":\(view.inFlight)"
            if let wait = view.wait {
                text += ",\"cause\":\"\(wait.cause.rawValue)\",\"until\":\(wait.until)"
                if let failures = wait.failures { text += ",\"failures\":\(failures)" }
            }
            text += "}"
        }
        text += "]"
        if let totals {
            text += ",\"totals\":{\"done\":\(totals.done),\"failed\":\(totals.failed),\"tokens\":{"
            text += totals.tokens.keys.sorted().map { key in
                var member = ""
                JSONText.appendQuoted(key, to: &member)
                return member + ":\(totals.tokens[key]!)"
            }.joined(separator: ",")
            text += "},\"batch_tokens\":{"
            text += totals.batchTokens.keys.sorted().map { key in
                var member = ""
                JSONText.appendQuoted(key, to: &member)
                return member + ":\(totals.batchTokens[key]!)"
            }.joined(separator: ",")
            text += "}}"
        }
        if !batches.isEmpty {
            text += ",\"batches\":["
            text += batches.map { String(decoding: $0.json(), as: UTF8.self) }.joined(separator: ",")
            text += "]"
        }
        if !remoteBatches.isEmpty {
            text += ",\"remote_batches\":["
            text += remoteBatches.map { $0.json() }.joined(separator: ",")
            text += "]"
        }
        if let intakePaused {
            text += ",\"intake_paused\":"
            JSONText.appendQuoted(intakePaused, to: &text)
        }
        text += "}\n"
        return Array(text.utf8)
    }

    /// A daemon whose status file stopped being rewritten while its process lives on (a full
    /// disk refuses the rewrite; a stopped or paused process writes nothing): its pid and
    /// when it last wrote. nil when the file is fresh or absent, or when its pid does not
    /// hold the spool's lock here (`LockTable`): a daemon killed long ago whose pid another
    /// program has now, a daemon on another machine of a shared spool, or a filesystem that
    /// cannot lock, which `status` then reports as before, not running.
    public static func silent(_ layout: SpoolLayout, now: Date = Date()) -> (pid: Int32, updatedAt: Date)? {
        guard let object = parsed(path(layout)),
              let pid = (object["pid"] as? NSNumber)?.int32Value, pid > 0,
              let updated = (object["updated_at"] as? String).flatMap(Timestamp.date),
              !isFresh(updated, now: now),
              let lock = try? Syscall.lstat(layout.lock),
              let table = try? FileReader.prefix(path: "/proc/locks", limit: 16 << 20) else { return nil }
        let holders = LockTable.flockHolders(inode: UInt64(lock.st_ino), in: String(decoding: table, as: UTF8.self))
        return holders.contains(pid) ? (pid, updated) : nil
    }

    /// The status file's object. On a full disk the daemon writes it over itself in place
    /// (`DurableFile.replaceKeepingRoom`), and a read in the instant of that write sees a
    /// mix: read again, a few times, before taking it for no status.
    private static func parsed(_ path: String) -> [String: Any]? {
        for attempt in 0..<3 {
            if attempt > 0 { usleep(5_000) }
            // No file (none running, or one being replaced): nothing to read again.
            guard let bytes = try? FileReader.prefix(path: path, limit: 64 << 20) else { return nil }
            if let object = JSONObject.parse(bytes) { return object }
        }
        return nil
    }

    /// The running daemon's status, or nil when none is running.
    public static func read(_ layout: SpoolLayout, now: Date = Date()) -> LiveStatus? {
        // No status file, or one being replaced: no daemon to report.
        guard let object = parsed(path(layout)),
              let pid = (object["pid"] as? NSNumber)?.int32Value,
              let updated = (object["updated_at"] as? String).flatMap(Timestamp.date),
              isFresh(updated, now: now),
              kill(pid, 0) == 0 || errno == EPERM else { return nil }
        let live = (object["in_flight"] as? [[String: Any]] ?? []).compactMap { entry -> TransferEngine.LiveTransfer? in
            guard let id = entry["id"] as? String, let started = (entry["started_at"] as? String).flatMap(Timestamp.date) else { return nil }
            return TransferEngine.LiveTransfer(id: id, startedAt: started, bytesReceived: (entry["bytes_received"] as? NSNumber)?.int64Value ?? 0,
                                               events: entry["events"] as? Int ?? 0, attempt: entry["attempt"] as? Int ?? 1,
                                               endpoint: entry["endpoint"] as? String ?? "")
        }
        var status = LiveStatus(pid: pid, updatedAt: updated, queued: object["queued"] as? Int ?? 0,
                                deferred: object["deferred"] as? Int ?? 0, inFlight: live)
        status.endpointCount = object["endpoints"] as? Int ?? 0
        status.endpointWaits = (object["endpoint_waits"] as? [[String: Any]] ?? []).compactMap { entry in
            guard let endpoint = entry["endpoint"] as? String, let cause = (entry["cause"] as? String).flatMap(EndpointWait.Cause.init(rawValue:)),
                  let until = (entry["until"] as? NSNumber)?.doubleValue, until.isFinite else { return nil }
            return TransferEngine.NamedEndpointWait(endpoint: endpoint, wait: EndpointWait(cause: cause, until: until, failures: entry["failures"] as? Int))
        }
        status.concurrency = object["concurrency"] as? Int ?? 0
        status.endpoints = (object["endpoint_list"] as? [[String: Any]] ?? []).compactMap { entry in
            guard let name = entry["name"] as? String, let api = (entry["api"] as? String).flatMap(EndpointAPI.init(rawValue:)) else { return nil }
            var view = RequestWaitJudge.EndpointView(name: name, api: api, concurrency: entry["concurrency"] as? Int ?? 1,
                                                     inFlight: entry["in_flight"] as? Int ?? 0)
            if let cause = (entry["cause"] as? String).flatMap(EndpointWait.Cause.init(rawValue:)),
               let until = (entry["until"] as? NSNumber)?.doubleValue, until.isFinite {
                view.wait = EndpointWait(cause: cause, until: until, failures: entry["failures"] as? Int)
            }
            return view
        }
        if let totals = object["totals"] as? [String: Any], let done = totals["done"] as? Int, let failed = totals["failed"] as? Int {
            status.totals = SpoolTotals(done: done, failed: failed, tokens: totals["tokens"] as? [String: Int] ?? [:],
                                        batchTokens: totals["batch_tokens"] as? [String: Int] ?? [:])
        }
        status.batches = (object["batches"] as? [[String: Any]] ?? []).compactMap(BatchProgress.init(json:))
        status.remoteBatches = (object["remote_batches"] as? [[String: Any]] ?? []).compactMap(BackgroundLane.Progress.init(json:))
        status.intakePaused = object["intake_paused"] as? String
        return status
    }
}
