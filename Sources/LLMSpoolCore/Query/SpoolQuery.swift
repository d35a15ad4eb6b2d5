import Foundation
import Glibc

/// Where a request stands, as the spool's folders tell it: one word per state, the same in
/// `status`, `show`, `queue`, JSON and the live line.
public enum RequestState: String, Sendable {
    case queued
    case inFlight = "in-flight"
    /// Waiting for its next attempt (a backoff or a provider's Retry-After).
    case deferred = "waiting"
    /// Kept unsent in the hold folder until released.
    case held
    /// Marked by its writer as not ready (`draft: true`): left alone in `outgoing`.
    case draft
    case done
    case failed
    case cancelled
    /// Left in `outgoing` because its name cannot be used (a reserved ending): never sent.
    case unusable
    case unknown
}

/// Everything `status` shows.
public struct StatusSummary: Sendable {
    public struct Waiting: Sendable {
        public var id: String
        public var nextAttemptAt: Date?
        public var attempts: Int
        public var lastError: String?
        /// Why it waits: its back-off, an endpoint's cool-down or pause.
        public var reason: String?
    }

    public var queued = 0
    public var inFlight = 0
    public var deferred = 0
    public var done = 0
    public var failed = 0
    public var held = 0
    /// Names of the drafts in `outgoing`.
    public var drafts: [String] = []
    /// Files left in `outgoing` because their names cannot be used, and why.
    public var unusable: [(name: String, reason: String)] = []
    /// The batches the running daemon reports, with their counts.
    public var batches: [BatchProgress] = []
    /// Why the running daemon reads no new file now (`LiveStatus.intakePaused`).
    public var intakePaused: String?
    /// Why no daemon writes or sends anything through the spool's folders now: one of them is
    /// a link or not a folder (`SpoolLayout.integrityProblem`). The daemon cannot say so in
    /// its status file then (it writes nothing through such names), so `status` looks itself.
    public var spoolProblem: String?
    public var tokens: [String: Int] = [:]
    /// The part of `tokens` answered through the background lane.
    public var batchTokens: [String: Int] = [:]
    public var transfers: [TransferEngine.LiveTransfer] = []
    public var waiting: [Waiting] = []
    /// Endpoints that take no request now, and why (from the running daemon).
    public var endpointWaits: [TransferEngine.NamedEndpointWait] = []
    public var daemonPID: Int32?
    /// A daemon whose process lives but whose status file is stale (`LiveStatus.silent`).
    public var silentDaemon: (pid: Int32, updatedAt: Date)?
    /// Every live daemon on a shared spool (empty on a spool without leases).
    public var daemons: [DaemonRoster.Entry] = []
    /// The groups the background lane carries, from their intent records.
    public var remoteBatches: [LaneQuery.Group] = []

    public func json() -> [UInt8] {
        var object: [String: Any] = [
            // "waiting" is the state's word; "deferred" stays for scripts written against it.
            "queued": queued, "in_flight": inFlight, "waiting": deferred, "deferred": deferred, "done": done, "failed": failed,
            "held": held, "tokens": tokens, "batch_tokens": batchTokens, "drafts": drafts,
            "daemon": daemonPID.map { ["running": true, "pid": $0] as [String: Any] }
                ?? silentDaemon.map { ["running": true, "pid": $0.pid, "status_written_at": Timestamp.string($0.updatedAt)] as [String: Any] }
                ?? ["running": false],
        ]
        object["daemons"] = daemons.map {
            ["host": $0.host, "pid": Int($0.pid), "queued": $0.queued, "deferred": $0.deferred, "in_flight": $0.inFlight,
             "updated_at": Timestamp.string($0.updatedAt)] as [String: Any]
        }
        object["in_flight_requests"] = transfers.map {
            ["id": $0.id, "started_at": Timestamp.string($0.startedAt), "bytes_received": $0.bytesReceived,
             "tokens_received": $0.events, "attempt": $0.attempt, "endpoint": $0.endpoint] as [String: Any]
        }
        object["endpoint_waits"] = endpointWaits.map {
            var item: [String: Any] = ["endpoint": $0.endpoint, "cause": $0.wait.cause.rawValue,
                                       "until": Timestamp.string(Date(timeIntervalSince1970: $0.wait.until)), "message": $0.message]
            if let failures = $0.wait.failures { item["failures"] = failures }
            return item
        }
        object["remote_batches"] = remoteBatches.map(\.json)
        object["unusable"] = unusable.map { ["name": $0.name, "reason": $0.reason] }
        if let intakePaused { object["intake_paused"] = intakePaused }
        if let spoolProblem { object["spool_problem"] = spoolProblem }
        object["deferred_requests"] = waiting.map { entry -> [String: Any] in
            var item: [String: Any] = ["id": entry.id, "attempts": entry.attempts]
            if let next = entry.nextAttemptAt { item["next_attempt_at"] = Timestamp.string(next) }
            if let error = entry.lastError { item["last_error"] = error }
            if let reason = entry.reason { item["reason"] = reason }
            return item
        }
        return JSONObject.encode(object)
    }

    /// The same object on one line: for `status --watch --json` (NDJSON).
    public func jsonLine() -> [UInt8] {
        // json() writes JSON, so both always succeed; the fallback keeps one line per report.
        guard let object = try? JSONSerialization.jsonObject(with: Data(json())),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return Array("{}\n".utf8) }
        return Array(data) + [0x0A]
    }

    /// How `status`, `queue` and `show` say that the spool is held, and why.
    static func held(_ problem: String) -> String {
        "spool held, nothing is sent: \(problem)"
    }

    public func text(now: Date = Date()) -> String {
        var lines = [daemonPID.map { "daemon: running (pid \($0))" }
            ?? silentDaemon.map { "daemon: running (pid \($0.pid)), but its status was last written \(Int(exactly: now.timeIntervalSince($0.updatedAt).rounded(.towardZero)).map(String.init) ?? "long") s ago: "
                + "the spool's disk may be full, its folders not the ones the daemon started with (unmounted, replaced), or the daemon stopped (SIGSTOP); counts below are read from the spool" }
            ?? (!daemons.isEmpty ? "daemons: \(daemons.count) running"
                // Its status file is read through the folders that hold the spool: a daemon
                // may run while they cannot say so.
                : spoolProblem != nil ? "daemon: unknown (the spool is held; a daemon's status cannot be read through its folders)" : "daemon: not running")]
        if !daemons.isEmpty && (daemons.count > 1 || daemonPID == nil) {
            for entry in daemons {
                lines.append("  \(Logger.escape(entry.host)) pid \(entry.pid): queued \(entry.queued)  in-flight \(entry.inFlight)  waiting \(entry.deferred)")
            }
        }
        lines.append("queued \(queued)  in-flight \(inFlight)  waiting \(deferred)  done \(done)  failed \(failed)  held \(held)")
        if let intakePaused { lines.append("intake paused: \(Logger.escape(intakePaused))") }
        if let spoolProblem { lines.append(Logger.escape(StatusSummary.held(spoolProblem))) }
        if !drafts.isEmpty {
            lines.append("drafts (not sent until saved without the draft mark): " + drafts.sorted().map(Logger.escape).joined(separator: "  "))
        }
        if !unusable.isEmpty {
            lines.append("left in outgoing, never sent (rename them to send them):")
            for file in unusable { lines.append("  \(Logger.escape(file.name)): \(Logger.escape(file.reason))") }
        }
        if !tokens.isEmpty {
            // The common names first (every dialect has them), then chat's own as before.
            let common = [(UsageNames.input, "input"), (UsageNames.output, "output"), (UsageNames.cachedInput, "cached input"),
                          (UsageNames.reasoning, "reasoning")]
            let raw = ["prompt_tokens", "completion_tokens", "total_tokens"].map { ($0, $0.replacingOccurrences(of: "_tokens", with: "")) }
            lines.append("tokens: " + (common + raw).compactMap { key, label in tokens[key].map { "\(label) \($0)" } }.joined(separator: "  "))
            if !batchTokens.isEmpty {
                lines.append("  of which through the background lane (batch rate): "
                             + (common + raw).compactMap { key, label in batchTokens[key].map { "\(label) \($0)" } }.joined(separator: "  "))
            }
        }
        if !transfers.isEmpty {
            lines.append("in-flight:")
            for transfer in transfers.sorted(by: { $0.startedAt < $1.startedAt }) {
                let elapsed = now.timeIntervalSince(transfer.startedAt)
                lines.append(String(format: "  %@  %.1fs  %lld bytes  %d tokens  attempt %d  %@", Logger.escape(transfer.id), elapsed,
                                    transfer.bytesReceived, transfer.events, transfer.attempt, transfer.endpoint))
            }
        }
        if !endpointWaits.isEmpty {
            lines.append("endpoints waiting:")
            for named in endpointWaits {
                lines.append("  " + Logger.escape(named.wait.describe(endpoint: named.endpoint) { Timestamp.clock(Date(timeIntervalSince1970: $0), now: now) }))
            }
        }
        if !remoteBatches.isEmpty {
            lines.append("remote batches:")
            for group in remoteBatches { lines.append("  \(group.members.count) requests \(Logger.escape(group.description))") }
        }
        if !waiting.isEmpty {
            lines.append("waiting:")
            for entry in waiting.sorted(by: { ($0.nextAttemptAt ?? .distantPast) < ($1.nextAttemptAt ?? .distantPast) }) {
                let next = entry.nextAttemptAt.map { String(format: "in %.1fs", max(0, $0.timeIntervalSince(now))) } ?? "soon"
                lines.append("  \(Logger.escape(entry.id))  next attempt \(next)  after \(entry.attempts) attempts  last error: \(entry.lastError.map(Logger.escape) ?? "-")")
                if let reason = entry.reason { lines.append("    waiting for: \(Logger.escape(reason))") }
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

    /// Ids of the requests in `outgoing`, each once (`a.json` and `a.md` are one id: the
    /// daemon sends one at a time).
    public func outgoingIDs() -> [String] {
        outgoing().ids
    }

    /// One listing of `outgoing`, each name classified once: the requests' ids (each once)
    /// and the files the daemon leaves there for their names, with why, by name.
    func outgoing() -> (ids: [String], unusable: [(name: String, reason: String)]) {
        var ids: [String] = []
        var seen = Set<String>()
        var unusable: [(name: String, reason: String)] = []
        // A view: a folder that is not there holds no request.
        for name in (try? Syscall.listDirectory(layout.outgoing)) ?? [] {
            switch RequestName.classify(name) {
            case .request(let id) where seen.insert(id).inserted: ids.append(id)
            case .unusable(let reason): unusable.append((name, reason))
            default: break
            }
        }
        return (ids, unusable.sorted { $0.name < $1.name })
    }

    /// The file of request `id` in `outgoing`, of whichever format (`<id>.json` first); a
    /// name the daemon leaves alone is none (`SpoolActions.existing`).
    public func requestPath(of id: String) -> String? {
        SpoolActions.existing(layout.outgoing, id)
    }

    /// The files in `outgoing` that the daemon leaves there because their names cannot be
    /// used, each with the reason it logged (`RequestName.Kind.unusable`).
    public func unusableFiles() -> [(name: String, reason: String)] {
        outgoing().unusable
    }

    /// What `show` and `wait` say of a file left in outgoing for its name.
    static func neverSent(_ reason: String) -> String { "left in outgoing, never sent: \(reason)" }

    /// `show <file>` for a file in `outgoing` left there because its name cannot be used
    /// (`queue` lists it by that name); nil for any other name.
    public func showUnusable(fileName: String) -> [String: Any]? {
        guard !fileName.contains("/"), case .unusable(let reason) = RequestName.classify(fileName),
              Syscall.isPresent("\(layout.outgoing)/\(fileName)") else { return nil }
        return ["file": "\(layout.outgoing)/\(fileName)", "state": RequestState.unusable.rawValue, "problem": Self.neverSent(reason)]
    }

    /// The file in `outgoing` that a request `id` would have, left there because its name
    /// cannot be used, and why; nil when there is none.
    public func unusableFile(of id: String) -> (path: String, reason: String)? {
        for suffix in RequestFormatRegistry.suffixes {
            let name = id + suffix
            guard case .unusable(let reason) = RequestName.classify(name), Syscall.isPresent("\(layout.outgoing)/\(name)") else { continue }
            return ("\(layout.outgoing)/\(name)", reason)
        }
        return nil
    }

    /// Whether the file at `path` is marked as a draft, as the daemon would judge it.
    public func isDraft(_ path: String) -> Bool {
        guard let name = path.split(separator: "/").last, let format = RequestName.format(of: String(name))?.format,
              case .success(let loaded)? = RequestFile.read(path: path, limit: Config().maxRequestBytes) else { return false }
        // The model rule is the daemon's (its default_model): any model will do to tell a draft.
        if case .draft = format.prepare(loaded.bytes, context: FormatContext(defaultModel: "-", yaml: LibYAML.reader)) { return true }
        return false
    }

    /// The names of the drafts in `outgoing`.
    public func drafts() -> [String] {
        // A view: a folder that is not there holds no draft.
        ((try? Syscall.listDirectory(layout.outgoing)) ?? []).filter { name in
            guard case .request = RequestName.classify(name) else { return false }
            return isDraft("\(layout.outgoing)/\(name)")
        }
    }

    /// Whether some format's name makes `id` a request's. One that none does (`x.batch`: its
    /// `incoming/x.batch.json` is batch x's summary) has no outcome or record of its own.
    public static func isRequestID(_ id: String) -> Bool {
        RequestFormatRegistry.suffixes.contains { RequestName.classify(id + $0) == .request(id: id) }
    }

    public func state(of id: String, live: LiveStatus? = nil, now: Date = Date()) -> RequestState {
        if let path = requestPath(of: id) {
            if let live {
                if live.inFlight.contains(where: { $0.id == id }) { return .inFlight }
            } else if Syscall.isPresent(layout.partial(id)) {
                return .inFlight
            }
            let record = TaskRecord.load(layout, id: id)
            if record?.status == .active || record == nil,
               waitVerdict(id, record: record, live: live, now: now).waiting {
                return .deferred
            }
            // Its outcome written and its file not removed yet: being published, not queued
            // again (the live status no longer lists it, its `.partial` is renamed).
            if let record, record.status == .done || record.status == .failed, outcomeBeingPublished(record, path: path) {
                return .inFlight
            }
            return isDraft(path) ? .draft : .queued
        }
        // An id no format makes a request's has no held file, outcome or record of its own
        // (`incoming/x.batch.json` is batch x's summary): only perhaps a file left alone.
        if Self.isRequestID(id) {
            if Syscall.isPresent(SpoolActions(layout: layout).held(id)) { return .held }
            let hasResult = Syscall.isPresent(layout.result(id))
            let hasFailure = Syscall.isPresent(layout.errorRecord(id))
            if hasResult && hasFailure {
                // Both outcomes of one id: the later one is the request's state.
                return OutcomeTimes(layout: layout, id: id).failureSuperseded ? .done : .failed
            }
            if hasResult { return .done }
            if hasFailure { return .failed }
            if TaskRecord.load(layout, id: id)?.status == .cancelled { return .cancelled }
        }
        return unusableFile(of: id) == nil ? .unknown : .unusable
    }

    /// Whether `record`, which says its task ended, is of the very file at `path` (not of an
    /// earlier file of the id). A file that cannot be looked at is not taken for it.
    private func outcomeBeingPublished(_ record: TaskRecord, path: String) -> Bool {
        do {
            guard let file = try SpoolFiles(layout: layout).identity(of: path), record.request != nil else { return false }
            return LeaseRules.removalFollowsAnEnd(record: record, removed: file)
        } catch {
            return false
        }
    }

    public func summary(now: Date = Date()) -> StatusSummary {
        var summary = StatusSummary()
        let live = LiveStatus.read(layout, now: now)
        summary.daemonPID = live?.pid
        if live == nil { summary.silentDaemon = LiveStatus.silent(layout, now: now) }
        summary.endpointWaits = live?.endpointWaits ?? []
        summary.batches = live?.batches ?? []
        summary.intakePaused = live?.intakePaused
        summary.spoolProblem = layout.integrityProblem()
        summary.daemons = DaemonRoster.read(layout, now: now)
        let inFlightIDs = Set(live?.inFlight.map(\.id) ?? [])
        let outgoing = outgoing()
        for id in outgoing.ids {
            let state = self.state(of: id, live: live, now: now)
            switch state {
            case .inFlight: summary.inFlight += 1
            case .deferred:
                summary.deferred += 1
                let record = TaskRecord.load(layout, id: id)
                let verdict = waitVerdict(id, record: record, live: live, now: now)
                summary.waiting.append(.init(id: id, nextAttemptAt: verdict.nextAttempt.map(Date.init(timeIntervalSince1970:)),
                                             attempts: record?.history.attempts.count ?? 0, lastError: record?.history.attempts.last?.message,
                                             reason: verdict.reason))
            case .draft: summary.drafts += requestPath(of: id).map { [String($0.split(separator: "/").last ?? "")] } ?? []
            default: summary.queued += 1
            }
        }
        summary.transfers = live?.inFlight.filter { inFlightIDs.contains($0.id) } ?? []
        summary.held = SpoolActions(layout: layout).heldIDs().count
        summary.unusable = outgoing.unusable
        summary.remoteBatches = LaneQuery(layout: layout, live: live).groups
        // A running daemon keeps the counts; reading every record is for a spool without one.
        let totals = live?.totals ?? finishedTotals()
        summary.done = totals.done
        summary.failed = totals.failed
        summary.tokens = totals.tokens
        summary.batchTokens = totals.batchTokens
        return summary
    }

    /// Results in `incoming`, error records in `failed` (an id with both counted once, by
    /// its later outcome) and the usage of every done record: one read of every task record.
    public func finishedTotals() -> SpoolTotals {
        var totals = SpoolTotals()
        var results = Set<String>()
        // A view: a folder that is not there holds nothing to count (likewise below).
        for name in (try? Syscall.listDirectory(layout.incoming)) ?? [] {
            if case .request(let id) = RequestName.classify(name) { results.insert(id) }
        }
        var failures = Set<String>()
        for name in (try? Syscall.listDirectory(layout.failed)) ?? [] where name.hasSuffix(SpoolLayout.errorRecordSuffix) && !name.hasPrefix(".") {
            failures.insert(String(name.dropLast(SpoolLayout.errorRecordSuffix.count)))
        }
        // An id with both outcomes counts once, by its later one.
        for id in results.intersection(failures) {
            if OutcomeTimes(layout: layout, id: id).failureSuperseded { failures.remove(id) } else { results.remove(id) }
        }
        totals.done = results.count
        totals.failed = failures.count
        for name in (try? Syscall.listDirectory(layout.state)) ?? [] {
            guard case .request(let id) = RequestName.classify(name),
                  let bytes = try? FileReader.prefix(path: layout.taskRecord(id), limit: 16 << 20),
                  let (usage, batch) = SpoolQuery.usageIfDone(bytes) else { continue }
            for (key, value) in usage { totals.tokens[key] = TokenCount.sum(totals.tokens[key, default: 0], value) }
            if batch {
                for (key, value) in usage { totals.batchTokens[key] = TokenCount.sum(totals.batchTokens[key, default: 0], value) }
            }
        }
        return totals
    }

    /// The usage of a done task record, read with RawJSON: a million records decoded
    /// through Foundation took minutes.
    /// `batch`: the answer came through the background lane (its last attempt names a remote batch).
    static func usageIfDone(_ bytes: [UInt8]) -> (usage: [String: Int], batch: Bool)? {
        guard let record = RawJSON.valueIfJSON(bytes), let status = record["status"].flatMap({ RawJSON.string($0, in: bytes) }),
              status == "done", case .object(let members, _)? = record["usage"] else { return nil }
        var usage: [String: Int] = [:]
        for member in members {
            guard case .number(let range) = member.value, let count = Int(String(decoding: bytes[range], as: UTF8.self)) else { continue }
            usage[member.key] = count
        }
        var batch = false
        if case .array(let attempts, _)? = record["attempts"], let last = attempts.last, let remote = last["remote_batch"], !remote.isNull { batch = true }
        return (usage, batch)
    }

    /// What a request waits for while a folder of the spool is a link or not a folder
    /// (`SpoolLayout.integrityProblem`), or nil: no daemon sends anything then.
    private func spoolHeldReason() -> String? {
        layout.integrityProblem().map(StatusSummary.held)
    }

    /// The requests not finished yet, oldest first: what `llmspool queue` lists.
    public func queue(now: Date = Date()) -> [QueueEntry] {
        let live = LiveStatus.read(layout, now: now)
        let held = spoolHeldReason()
        let lane = LaneQuery(layout: layout).byMember
        var entries: [QueueEntry] = []
        let outgoing = outgoing()
        for id in outgoing.ids {
            // Gone since it was listed: no longer queued.
            guard let path = requestPath(of: id), let info = try? Syscall.lstat(path) else { continue }
            let state = self.state(of: id, live: live, now: now)
            let record = TaskRecord.load(layout, id: id)
            let arrived = Date(timeIntervalSince1970: Double(info.st_ctim.tv_sec))
            var entry = QueueEntry(id: id, state: state, bytes: Int64(info.st_size), since: record?.history.firstSeen ?? arrived,
                                   attempts: record?.history.attempts.count ?? 0, endpoint: record?.endpoint)
            if let transfer = live?.inFlight.first(where: { $0.id == id }) {
                entry.endpoint = transfer.endpoint
                entry.attempts = max(entry.attempts, transfer.attempt)
            }
            if state == .queued, let group = lane[id] {
                entry.reason = group.description
            } else if state == .queued, let problem = RequestFile.problem(with: info) {
                // What intake will say of it: such a file is moved to failed/, never sent. One
                // in a remote batch was read and sent before (a link made since changes nothing).
                entry.reason = "refused when read: \(problem.message)" + (live == nil ? " (no daemon running)" : "")
            } else if state == .queued && live == nil {
                entry.reason = "no daemon running"
            } else if state == .queued || state == .deferred {
                entry.reason = waitVerdict(id, record: record, live: live, now: now).reason
            }
            if state == .queued, entry.reason == nil, let paused = live?.intakePaused {
                // A file read before the pause goes all the same; a newer one waits for room.
                entry.reason = "intake paused (a file not read yet waits): \(paused)"
            }
            // Nothing starts while the spool is held, whatever else would: its status file
            // is not written meanwhile, so without this the daemon would read as not running.
            if state == .queued || state == .deferred, let held { entry.reason = held }
            entries.append(entry)
        }
        let actions = SpoolActions(layout: layout)
        for id in actions.heldIDs() {
            // Gone since it was listed: no longer held.
            guard let info = try? Syscall.lstat(actions.held(id)) else { continue }
            let record = TaskRecord.load(layout, id: id)
            entries.append(QueueEntry(id: id, state: .held, bytes: Int64(info.st_size),
                                      since: record?.history.firstSeen ?? Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec)),
                                      attempts: record?.history.attempts.count ?? 0, endpoint: record?.endpoint,
                                      reason: "held: llmspool release \(id)"))
        }
        for file in outgoing.unusable {
            // Gone since it was listed: nothing to list.
            guard let info = try? Syscall.lstat("\(layout.outgoing)/\(file.name)") else { continue }
            entries.append(QueueEntry(id: file.name, state: .unusable, bytes: Int64(info.st_size),
                                      since: Date(timeIntervalSince1970: Double(info.st_ctim.tv_sec)), attempts: 0, endpoint: nil,
                                      reason: "left in outgoing: \(file.reason)"))
        }
        return entries.sorted { ($0.since, $0.id) < ($1.since, $1.id) }
    }

    /// The dialect of a request: the one its file validates as (in `outgoing`, or in
    /// `failed` after a failure), else the one its task record names (a done request's file
    /// is gone). Nil when neither says; `recordOnly` skips reading the files.
    public func dialect(of id: String, recordOnly: Bool) -> (any Dialect)? {
        if !recordOnly {
            for path in [layout.request(id), layout.failedRequest(id)] {
                // Opened as the daemon opens requests: never a link, never a FIFO to block on.
                guard case .success(let loaded)? = RequestFile.read(path: path, limit: 32 << 20),
                      case .success(let summary) = RequestValidator.validate(loaded.bytes) else { continue }
                return DialectRegistry.dialect(for: summary)
            }
        }
        return TaskRecord.load(layout, id: id)?.dialect.flatMap(DialectRegistry.dialect(id:))
    }

    /// Whether request `id` (in `outgoing`, not in flight) waits, until when and why: its own
    /// back-off from its record, and the running daemon's endpoints that could carry it.
    public func waitVerdict(_ id: String, record: TaskRecord?, live: LiveStatus?, now: Date) -> RequestWaitJudge.Verdict {
        let endpoints = live?.endpoints ?? []
        var need = RequestWaitJudge.Need(preferred: record?.history.preferredEndpoint ?? 0)
        // Which endpoints may carry it matters only when one of them waits, or one of several
        // is full; the request file is read (and validated) only then.
        if endpoints.contains(where: { $0.wait != nil }) || (endpoints.count > 1 && endpoints.contains(where: { $0.inFlight >= $0.concurrency })),
           let path = requestPath(of: id), case .success(let loaded)? = RequestFile.read(path: path, limit: 32 << 20),
           case .success(let summary) = RequestValidator.validate(loaded.bytes) {
            need.api = DialectRegistry.dialect(for: summary).api
            need.pinned = summary.endpoint
        }
        let slots = live.map { RequestWaitJudge.Slots(concurrency: $0.concurrency, inFlight: $0.inFlight.count) }.flatMap { $0.concurrency > 0 ? $0 : nil }
        return RequestWaitJudge.judge(ownNotBefore: record?.history.notBefore?.timeIntervalSince1970, lastError: record?.history.attempts.last?.message,
                                      need: need, endpoints: endpoints, slots: slots, now: now.timeIntervalSince1970) {
            Timestamp.clock(Date(timeIntervalSince1970: $0), now: now)
        }
    }

    /// Everything known about one request, as a JSON object.

    public func show(_ id: String, now: Date = Date()) -> [String: Any] {
        let live = LiveStatus.read(layout, now: now)
        let state = state(of: id, live: live, now: now)
        var object: [String: Any] = ["id": id, "state": state.rawValue]
        var files: [String: String] = [:]
        if state == .unusable, let unusable = unusableFile(of: id) {
            files["request"] = unusable.path
            object["problem"] = Self.neverSent(unusable.reason)
        }
        // The files named by an id no format makes a request's are others' (a batch's summary).
        guard Self.isRequestID(id) else {
            object["files"] = files
            return object
        }
        for (name, path) in [("partial", layout.partial(id)), ("result", layout.result(id)), ("transcript", layout.transcript(id)),
                             ("raw_stream", layout.rawStream(id)), ("failed_request", SpoolActions.existing(layout.failed, id) ?? layout.failedRequest(id)),
                             ("error_record", layout.errorRecord(id)), ("task_record", layout.taskRecord(id))] where Syscall.isPresent(path) {
            files[name] = path
        }
        // The request's own file; a name the daemon leaves alone was given above, as the problem's.
        if let request = requestPath(of: id) { files["request"] = request }
        object["files"] = files
        if let original = layout.loadOriginalName(id) { object["original_name"] = original }
        if let transfer = live?.inFlight.first(where: { $0.id == id }) {
            object["in_flight"] = ["started_at": Timestamp.string(transfer.startedAt), "bytes_received": transfer.bytesReceived,
                                   "tokens_received": transfer.events, "attempt": transfer.attempt, "endpoint": transfer.endpoint]
        }
        if let dialect = dialect(of: id, recordOnly: false) { object["dialect"] = dialect.id }
        if let record = TaskRecord.load(layout, id: id) {
            object["first_seen"] = Timestamp.string(record.history.firstSeen)
            object["attempts"] = record.history.attempts.map(TaskRecord.encode)
            if record.status == .active, record.history.notBefore != nil,
               let next = waitVerdict(id, record: record, live: live, now: now).nextAttempt ?? record.history.notBefore?.timeIntervalSince1970 {
                object["next_attempt_at"] = Timestamp.string(Date(timeIntervalSince1970: next))
            }
            if let endpoint = record.endpoint { object["endpoint"] = endpoint }
            if let usage = record.usage { object["usage"] = usage }
        }
        if object["state"] as? String == RequestState.queued.rawValue, let group = LaneQuery(layout: layout, live: live).group(of: id) {
            object["lane"] = "batch"
            object["remote_batch"] = group.json
            object["waiting_for"] = group.description
        } else if ["queued", "waiting"].contains(object["state"] as? String) {
            let verdict = waitVerdict(id, record: TaskRecord.load(layout, id: id), live: live, now: now)
            if let reason = verdict.reason { object["waiting_for"] = reason }
            if object["next_attempt_at"] == nil, let next = verdict.nextAttempt { object["next_attempt_at"] = Timestamp.string(Date(timeIntervalSince1970: next)) }
        }
        if ["queued", "waiting"].contains(object["state"] as? String), let held = spoolHeldReason() { object["waiting_for"] = held }
        if object["state"] as? String != RequestState.failed.rawValue, Syscall.isPresent(layout.errorRecord(id)) {
            // A later outcome replaced this failure: it is history, not the request's error.
            object["superseded_failure"] = layout.errorRecord(id)
        // No readable error record: the request's view has no error to show.
        } else if let bytes = try? FileReader.prefix(path: layout.errorRecord(id), limit: 1 << 20), let error = JSONObject.parse(bytes) {
            object["error"] = ["kind": error["kind"] ?? NSNull(), "message": error["message"] ?? NSNull(), "http_status": error["http_status"] ?? NSNull()]
            if object["attempts"] == nil { object["attempts"] = error["attempt_log"] }
        }
        return object
    }
}
