import Foundation
import Glibc

/// The operator's changes to a spool: `retry`, `cancel`, `clean`. Each works with or
/// without a daemon, through the same files the daemon watches.
public struct SpoolActions: Sendable {
    public let layout: SpoolLayout

    public init(layout: SpoolLayout) {
        self.layout = layout
    }

    /// The request file of `id` in `folder`, of whichever format (`<id>.json` first). A name
    /// the daemon leaves alone (`a.error.json`, `x.batch.md`: reserved endings) is no
    /// request's file, even where another format's name of the id is (`a.error.md`).
    public static func existing(_ folder: String, _ id: String) -> String? {
        RequestFormatRegistry.suffixes.lazy.compactMap { suffix -> String? in
            guard case .request(id) = RequestName.classify(id + suffix) else { return nil }
            return "\(folder)/\(id)\(suffix)"
        }.first(where: Syscall.isPresent)
    }

    /// The same name as `path` (its ending kept) in `folder`.
    static func moved(_ path: String, to folder: String, id: String) -> String {
        "\(folder)/\(id)\(RequestName.suffix(ofPath: path))"
    }

    /// Ids with a failed request.
    public func failedIDs() -> [String] {
        // A folder that is not there holds no failure.
        Set(((try? Syscall.listDirectory(layout.failed)) ?? []).compactMap { name -> String? in
            guard case .request(let id) = RequestName.classify(name), !name.hasSuffix(SpoolLayout.errorRecordSuffix) else { return nil }
            return id
        }).sorted()
    }

    /// Where `retry --all-failed` puts failures that a later outcome of the same id
    /// replaced: kept for inspection, never sent again. Not an id: no `.json` suffix.
    public var supersededFolder: String { layout.superseded }

    /// Failed ids whose failure a later result of the same id replaced.
    public func supersededIDs() -> [String] {
        failedIDs().filter { OutcomeTimes(layout: layout, id: $0).failureSuperseded }
    }

    /// Moves a superseded failure (request and record) into `failed/superseded/`, numbered
    /// as the finisher numbers an earlier failure it moves aside: nothing there is overwritten.
    public func archive(_ id: String) throws {
        try refuseFoldersElsewhere()
        let steps: [PublicationStep] = [.archiveIfPresent(layout.errorRecord(id), into: layout.superseded),
                                        .archiveIfPresent(Self.existing(layout.failed, id) ?? layout.failedRequest(id), into: layout.superseded),
                                        .syncFolder(layout.failed)]
        if case .failed(_, _, let error) = PublicationExecutor(files: SpoolFiles(layout: layout)).run(steps) { throw error }
        try Syscall.fsyncDirectory(supersededFolder)
    }

    /// Why `command` cannot act on `id`: a batch file of that name is named as such (these
    /// commands act on requests), else the request is not in `outgoing`.
    func notInOutgoing(_ id: String, _ command: String) -> ConfigError {
        if Syscall.isPresent(layout.batchRequest(id)) {
            return ConfigError("\(id): \(layout.batchRequest(id)) is a batch file; \(command) acts on requests, not batches "
                + "(`llmspool cancel \(id)` cancels the batch; a failed batch line is sent again by dropping a batch of it)")
        }
        return ConfigError("\(id): not in \(layout.outgoing) (finished, failed, held or never dropped)")
    }

    /// Moves a failed request back to `outgoing`. Its task record goes first: a record that
    /// says `failed` would send the request straight back (see `TaskRecord`).
    public func retry(_ id: String) throws {
        try refuseFoldersElsewhere()
        guard let failed = Self.existing(layout.failed, id) else {
            if Syscall.isPresent(layout.batchRequest(id)) { throw notInOutgoing(id, "retry") }
            throw ConfigError("\(id): no failed request \(layout.failedRequest(id))")
        }
        if let queued = Self.existing(layout.outgoing, id) { throw ConfigError("\(id): \(queued) already exists") }
        let target = Self.moved(failed, to: layout.outgoing, id: id)
        try Syscall.unlinkIfPresent(layout.taskRecord(id))
        try Syscall.unlinkIfPresent(layout.errorRecord(id))
        try Syscall.fsyncDirectory(layout.state)
        try Syscall.rename(failed, target)
        try Syscall.fsyncDirectory(layout.outgoing)
        try Syscall.fsyncDirectory(layout.failed)
    }

    /// Asks the running daemons to send a request waiting in `outgoing` (queued or waiting
    /// for its retry) now, or with nil every waiting one, like `postqueue -i` and `-f`.
    public func sendNow(_ id: String?) throws {
        if let id, !Syscall.isPresent(layout.request(id)) {
            throw notInOutgoing(id, "retry")
        }
        do { try Syscall.mkdir(layout.control, mode: layout.directoryMode) } catch let error as SystemError where error.errno == EEXIST {}
        let path = id.map(layout.sendNow) ?? layout.sendNowAll
        // Written whole under a hidden name, then renamed: a daemon never acts on half a file,
        // and a second request rewrites the file, which then acts again.
        try DurableFile.replace(Array("\(Date().timeIntervalSince1970)\n".utf8), at: path, mode: layout.fileMode)
    }

    var holdFolder: String { layout.hold }

    /// The held file of `id` (of whichever format), or where a JSON one would be.
    public func held(_ id: String) -> String { Self.existing(holdFolder, id) ?? "\(holdFolder)/\(id)\(SpoolLayout.requestSuffix)" }

    /// Ids of the held requests.
    public func heldIDs() -> [String] {
        // A folder that is not there holds nothing held.
        Set(((try? Syscall.listDirectory(holdFolder)) ?? []).compactMap { name -> String? in
            if case .request(let id) = RequestName.classify(name) { return id }
            return nil
        }).sorted()
    }

    /// Keeps a request unsent until `release`. One in flight is stopped, as by deletion.
    public func hold(_ id: String) throws {
        try refuseFoldersElsewhere()
        guard let request = Self.existing(layout.outgoing, id) else {
            throw notInOutgoing(id, "hold")
        }
        do { try Syscall.mkdir(holdFolder, mode: layout.directoryMode) } catch let error as SystemError where error.errno == EEXIST {}
        if let already = Self.existing(holdFolder, id) { throw ConfigError("\(id): \(already) already exists") }
        try Syscall.rename(request, Self.moved(request, to: holdFolder, id: id))
        try Syscall.fsyncDirectory(holdFolder)
        try Syscall.fsyncDirectory(layout.outgoing)
    }

    /// Puts a held request back in `outgoing`, where the daemon picks it up.
    public func release(_ id: String) throws {
        try refuseFoldersElsewhere()
        guard let request = Self.existing(holdFolder, id) else { throw ConfigError("\(id): not held (no \(held(id)))") }
        if let queued = Self.existing(layout.outgoing, id) { throw ConfigError("\(id): \(queued) already exists") }
        try Syscall.rename(request, Self.moved(request, to: layout.outgoing, id: id))
        try Syscall.fsyncDirectory(layout.outgoing)
        try Syscall.fsyncDirectory(holdFolder)
    }

    /// What `cancel` deleted.
    public enum Cancelled: Equatable, Sendable {
        case request(id: String)
        case held(id: String)
        /// The batch file of this name: the daemon ends the batch as when its input is deleted.
        /// `begun`: it has a journal (lines may have been sent); else it never started, and
        /// leaves no output.
        case batch(name: String, begun: Bool)
    }

    /// Cancels a queued, waiting or running request, or a batch file, as deleting its file
    /// does; a held request is deleted from the hold folder. `name` is a request's id, or a
    /// batch's name with or without `.jsonl` (`CancelTarget`): a request of the id comes first.
    public func cancel(_ name: String) throws -> Cancelled {
        try refuseFoldersElsewhere()
        let candidates = CancelTarget.candidates(of: name)
        for candidate in candidates {
            switch candidate {
            case .request(let id):
                if let request = Self.existing(layout.outgoing, id), try unlinkUnlessGone(request) { return .request(id: id) }
                if let held = Self.existing(holdFolder, id), try unlinkUnlessGone(held) { return .held(id: id) }
            case .batch(let batch):
                // Every line ended (its journal says so, whether a daemon runs or not), its end
                // not published yet: removing the input would cancel nothing, and "cancelled"
                // would be a lie once the summary says completed.
                if let ended = BatchQuery(layout: layout).fromJournal(batch), ended.total > 0, ended.done >= ended.total {
                    let held = LiveStatus.read(layout)?.batches.first { $0.name == batch }?.publishProblem
                    throw ConfigError("\(Logger.escape(name)): every line of batch \(layout.batchRequest(batch)) has ended; nothing is left to "
                        + "cancel (its end is published " + (held.map { "once it can be: \(Logger.escape($0)))" } ?? "by the daemon)"))
                }
                let begun = Syscall.isRegularFile(layout.batchJournal(batch))
                if try unlinkUnlessGone(layout.batchRequest(batch)) { return .batch(name: batch, begun: begun) }
            }
        }
        let shown = Logger.escape(name)
        guard let first = candidates.first else { throw ConfigError("\(shown): not a request id or a batch name") }
        switch (first, candidates.count) {
        case (.batch(let batch), _):
            throw ConfigError("\(shown): no batch \(layout.batchRequest(batch)) (finished, or never dropped)")
        case (.request, 1):
            throw ConfigError("\(shown): not in \(layout.outgoing) (finished, failed or never dropped)")
        case (.request, _):
            throw ConfigError("\(shown): no request or batch of that name in \(layout.outgoing) (finished, failed or never dropped)")
        }
    }

    /// False when `path` was not there (finished meanwhile, say): the next candidate is looked at.
    private func unlinkUnlessGone(_ path: String) throws -> Bool {
        do {
            try Syscall.unlink(path)
            return true
        } catch let error as SystemError where error.errno == ENOENT {
            return false
        }
    }

    /// What `clean` removed.
    public struct Cleaned: Sendable, Equatable {
        public var results = 0
        public var failures = 0
        public var records = 0
        /// Ended batches (output, errors file and summary) and refused batch files.
        public var batches = 0
        /// What could not be removed, each naming its file and why; the rest was cleaned.
        public var problems: [String] = []
    }

    /// Removes results, failures, finished task records and ended or refused batches last
    /// changed before `cutoff`. Never touches `outgoing`, a task still running, or a batch
    /// whose name is in `outgoing` or has a journal. A file that cannot be removed is named
    /// in `problems` and the rest goes on: one stuck entry must not stop every later clean.
    public func clean(olderThan cutoff: Date) throws -> Cleaned {
        try refuseFoldersElsewhere()
        var cleaned = Cleaned()
        func old(_ path: String) -> Bool {
            // Gone already: nothing to clean.
            guard let info = try? Syscall.lstat(path) else { return false }
            return Double(info.st_mtim.tv_sec) < cutoff.timeIntervalSince1970
        }
        /// Removes `paths` in order, stopping at the first that fails; true when all went.
        /// `trees`: a path may be a folder, removed with what it holds (a folder dropped
        /// under a request's name, which the daemon moved to failed/ unread).
        func remove(_ paths: [String], trees: Bool = false) -> Bool {
            for path in paths {
                do {
                    if trees { try Syscall.removeTree(path) } else { try Syscall.unlinkIfPresent(path) }
                } catch {
                    cleaned.problems.append("\(error)")
                    return false
                }
            }
            return true
        }
        let running = Set(SpoolQuery(layout: layout).outgoingIDs())
        // Ids whose outcome could not be removed keep their task record: `show` reads it.
        var kept = Set<String>()
        for name in try Syscall.listDirectory(layout.incoming) {
            // Results only: a transcript (`<id>.md`) goes with its result.
            guard name.hasSuffix(SpoolLayout.requestSuffix), case .request(let id) = RequestName.classify(name), !running.contains(id),
                  old(layout.result(id)) else { continue }
            if remove([layout.rawStream(id), layout.transcript(id), layout.result(id)]) { cleaned.results += 1 } else { kept.insert(id) }
        }
        for id in failedIDs() where !running.contains(id) {
            // Dated by the failure itself, never by the request file's mtime.
            guard let failedAt = OutcomeTimes(layout: layout, id: id).failed, failedAt < cutoff else { continue }
            if remove(RequestFormatRegistry.suffixes.map { "\(layout.failed)/\(id)\($0)" }, trees: true) && remove([layout.errorRecord(id)]) {
                cleaned.failures += 1
            } else {
                kept.insert(id)
            }
        }
        for name in try Syscall.listDirectory(layout.state) {
            guard case .request(let id) = RequestName.classify(name), !running.contains(id), !kept.contains(id), old(layout.taskRecord(id)),
                  let record = TaskRecord.load(layout, id: id), record.status != .active else { continue }
            if remove([layout.taskRecord(id)]) { cleaned.records += 1 }
        }
        // A renamed request's original name goes once nothing of its id is left to show it
        // with: after its record, so that a clean cut short never leaves a record without it.
        for name in try Syscall.listDirectory(layout.state) where name.hasSuffix(SpoolLayout.originalNameSuffix) {
            let id = String(name.dropLast(SpoolLayout.originalNameSuffix.count))
            guard case .request = RequestName.classify(id + SpoolLayout.requestSuffix), !running.contains(id), !kept.contains(id),
                  old(layout.originalName(id)), !Syscall.isPresent(layout.taskRecord(id)), !Syscall.isPresent(layout.result(id)),
                  !Syscall.isPresent(layout.errorRecord(id)), SpoolActions.existing(layout.failed, id) == nil,
                  SpoolActions.existing(layout.hold, id) == nil,
                  // Renamed since `running` was listed: its request is in outgoing now.
                  SpoolActions.existing(layout.outgoing, id) == nil else { continue }
            _ = remove([layout.originalName(id)])
        }
        func runningBatch(_ name: String) -> Bool {
            Syscall.isPresent(layout.batchRequest(name)) || Syscall.isPresent(layout.batchJournal(name))
        }
        // A batch is dated by its summary, its last file, which goes last: a clean cut short
        // leaves the summary, and the next one finds the batch again.
        for file in try Syscall.listDirectory(layout.incoming) where file.hasSuffix(SpoolLayout.batchSummarySuffix) {
            let name = String(file.dropLast(SpoolLayout.batchSummarySuffix.count))
            guard case .batch = RequestName.classify(name + SpoolLayout.batchSuffix), !runningBatch(name), old(layout.batchSummary(name)) else { continue }
            if remove([layout.batchOutput(name), layout.batchErrors(name), layout.batchSummary(name)]) { cleaned.batches += 1 }
        }
        // A refused batch file, dated by its refusal's record, or by its move into failed/
        // when that record is unreadable; the file goes first, so that a clean cut short
        // still finds it.
        for file in try Syscall.listDirectory(layout.failed) {
            guard case .batch(let name) = RequestName.classify(file), !runningBatch(name),
                  let refusedAt = OutcomeTimes.failedAt(layout.batchErrorRecord(name)) ?? OutcomeTimes.changed(layout.failedBatch(name)),
                  refusedAt < cutoff else { continue }
            if remove([layout.failedBatch(name), layout.batchErrorRecord(name)]) { cleaned.batches += 1 }
        }
        return cleaned
    }

    /// Moving or removing a spool's files through a folder that is a symbolic link would
    /// move or remove files outside the spool: refused, naming the folder.
    private func refuseFoldersElsewhere() throws {
        if let problem = layout.integrityProblem() { throw ConfigError("\(problem); nothing was changed") }
    }

    /// "90s", "15m", "12h", "7d", "2w" in seconds.
    public static func age(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let unit = text.last, let factor = units[unit], let value = Double(text.dropLast()), value >= 0 else { return nil }
        return value * factor
    }
}
