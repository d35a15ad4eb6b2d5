import Foundation
import Glibc

/// What the spool says about a batch, read from its files and the daemon's live status:
/// for `show`, `status` and `submit --wait`. Reads only.
public struct BatchQuery: Sendable {
    /// Where a batch is.
    public enum State: Equatable {
        /// Its summary is published: the batch ended (`completed` or `cancelled`).
        case ended(summary: [String: Any], path: String)
        /// Refused at validation: its error record.
        case refused(record: [String: Any], path: String)
        /// Running, with its counts when a daemon reports them.
        case running(BatchProgress?)
        case unknown

        public static func == (left: State, right: State) -> Bool {
            switch (left, right) {
            case (.ended(_, let a), .ended(_, let b)), (.refused(_, let a), .refused(_, let b)): a == b
            case (.running(let a), .running(let b)): a == b
            case (.unknown, .unknown): true
            default: false
            }
        }
    }

    public let layout: SpoolLayout

    public init(layout: SpoolLayout) {
        self.layout = layout
    }

    /// The input is looked at first: a batch still in `outgoing` runs, whatever an earlier
    /// batch of the name left in `incoming`.
    public func state(of name: String, now: Date = Date()) -> State {
        if Syscall.isPresent(layout.batchRequest(name)) {
            return .running(LiveStatus.read(layout, now: now)?.batches.first { $0.name == name })
        }
        if let summary = object(layout.batchSummary(name)) { return .ended(summary: summary, path: layout.batchSummary(name)) }
        if Syscall.isPresent(layout.failedBatch(name)), let record = object(layout.batchErrorRecord(name)) {
            return .refused(record: record, path: layout.batchErrorRecord(name))
        }
        // Its input left and its end is not published yet (a folder in the way of its
        // summary): the daemon still lists it.
        if let progress = LiveStatus.read(layout, now: now)?.batches.first(where: { $0.name == name }) { return .running(progress) }
        // Its input left while no daemon reports, its end not published: the journal says
        // the batch is there, and the next daemon to look ends it. (A folder at the name is
        // no journal: the daemon leaves it, and a wait for it would never end.)
        if Syscall.isRegularFile(layout.batchJournal(name)) { return .running(nil) }
        return .unknown
    }

    /// Whether `show` should take `name` for a batch's: a name a batch may have (`z.batch`
    /// is not: `z.batch.jsonl` is left in outgoing as unusable), and one the spool knows.
    public func isBatch(_ name: String) -> Bool {
        RequestName.classify(name + SpoolLayout.batchSuffix) == .batch(name: name) && state(of: name) != .unknown
    }

    /// `show <name>` for a batch: the summary once it ended, the record of a refusal, or the
    /// running counts.
    public func show(_ name: String) -> [String: Any] {
        switch state(of: name) {
        case .ended(let summary, let path):
            var details: [String: Any] = ["batch": name, "state": "ended", "summary_file": path, "summary": summary]
            // None for an output lost before it was published (its summary names none).
            if summary["output_file_id"] is String { details["output"] = layout.batchOutput(name) }
            return details
        case .refused(let record, let path):
            return ["batch": name, "state": "refused", "record_file": path, "record": record]
        case .running(let progress):
            let inputThere = Syscall.isPresent(layout.batchRequest(name))
            // With no daemon reporting, the journal says whether every line ended.
            let counted = progress ?? (inputThere ? fromJournal(name) : nil)
            var state = Self.phase(progress, inputThere: inputThere)
            if progress == nil, let counted, counted.total > 0, counted.done >= counted.total { state = .ending }
            // No daemon reports it and no journal at all: not begun, whether or not a daemon
            // runs (one that does begins it at its next look). A journal that cannot be read
            // here, or was written through another machine's mount, may be of a run elsewhere.
            if progress == nil, inputThere, counted == nil, !Syscall.isPresent(layout.batchJournal(name)) { state = .queued }
            var details: [String: Any] = ["batch": name, "state": state.rawValue]
            if let problem = progress?.publishProblem ?? progress?.startProblem { details["problem"] = problem }
            // Only the files there: a held end's output may have its name already, and an
            // input removed leaves the batch to end as it is.
            if inputThere { details["input"] = layout.batchRequest(name) }
            if Syscall.isPresent(layout.batchPartial(name)) { details["partial_output"] = layout.batchPartial(name) }
            if let counted, let object = JSONObject.parse(counted.json()) { details["progress"] = object }
            return details
        case .unknown:
            return ["batch": name, "state": "unknown"]
        }
    }

    /// What a batch not ended yet is doing, for `show`.
    public enum Phase: String {
        /// Its lines are being sent (or, with no daemon reporting, wait for one).
        case running
        /// In `outgoing`, not begun: no daemon reports it and nothing is at its journal's name.
        case queued
        /// Every line ended, its end not published yet (`publishProblem`), or its input left
        /// (cancelled) and its end waits for the daemon.
        case ending
        /// Validated, it cannot be started yet (`startProblem`).
        case waiting
    }

    public static func phase(_ progress: BatchProgress?, inputThere: Bool) -> Phase {
        progress?.publishProblem != nil || !inputThere ? .ending : progress?.startProblem != nil ? .waiting : .running
    }

    /// The batches in `outgoing` as their journals count them, for `status` when no daemon
    /// reports (none runs, or the one running is stopped): nil counts for a batch not begun
    /// yet, or whose journal cannot be read or is of another file of the name (one replaced
    /// since, or a batch seen through another machine's mount). Nothing in flight is known.
    public func fromJournals() -> [(name: String, progress: BatchProgress?)] {
        // A view: a folder that is not there holds no batch.
        ((try? Syscall.listDirectory(layout.outgoing)) ?? []).compactMap { file -> String? in
            guard case .batch(let name) = RequestName.classify(file) else { return nil }
            return name
        }.sorted().compactMap { name in
            guard Syscall.isPresent(layout.batchRequest(name)) else { return nil }
            return (name, fromJournal(name))
        }
    }

    /// The batches whose input left while no daemon ran them, their end not published yet:
    /// a journal without its input. The next daemon to start ends each (published when
    /// every line was committed, else cancelled), and until then `status` names them.
    public func endsOwed() -> [String] {
        // A view: a folder that is not there holds no batch.
        ((try? Syscall.listDirectory(layout.batches)) ?? []).compactMap { file -> String? in
            guard file.hasSuffix(SpoolLayout.batchJournalSuffix), !file.hasPrefix(SpoolLayout.hiddenPrefix) else { return nil }
            let name = String(file.dropLast(SpoolLayout.batchJournalSuffix.count))
            // A journal a daemon would end: its header readable, its summary not out (one left
            // by a crash after the summary only has its files removed).
            guard case .batch = RequestName.classify(name + SpoolLayout.batchSuffix), !Syscall.isPresent(layout.batchRequest(name)),
                  !Syscall.isPresent(layout.batchSummary(name)), hasHeader(layout.batchJournal(name)) else { return nil }
            return name
        }.sorted()
    }

    /// Whether `path` is a regular file whose first line is a journal's header.
    private func hasHeader(_ path: String) -> Bool {
        do {
            let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
            guard try file.fstat().st_mode & S_IFMT == S_IFREG else { return false }
            let head = try Syscall.preadAll(file.rawValue, count: 4096, at: 0, path: path)
            guard let end = head.firstIndex(of: 0x0A) else { return false }
            return BatchJournal.header(head[..<end]) != nil
        } catch {
            // Not one: gone, a link, unreadable.
            return false
        }
    }

    /// The counts of the batch in `outgoing` named `name` from its journal: nil when there is
    /// no input, no journal of it, or one that cannot be read.
    public func fromJournal(_ name: String) -> BatchProgress? {
        do {
            guard let input = try SpoolFiles(layout: layout).identity(of: layout.batchRequest(name)) else { return nil }
            return try counted(name, input: input)
        } catch {
            // Not counted: the journal is not there, not a regular file, or unreadable.
            return nil
        }
    }

    /// Streams the journal: a million lines' journal is tens of megabytes, and `status
    /// --watch` reads it every interval. Its header is checked first, so a journal of another
    /// file (or a forged one naming 2^31 lines) costs no more than its first line.
    private func counted(_ name: String, input: FileIdentity) throws -> BatchProgress? {
        struct Stop: Error {}
        let path = layout.batchJournal(name)
        // Never a link, never a FIFO to block on (`FileReader.prefix`).
        let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        let info = try file.fstat()
        guard info.st_mode & S_IFMT == S_IFREG else { return nil }
        var journal: BatchJournal?
        do {
            // No record is longer than 4 KiB; a torn last one is not a record, as in replay.
            try FileReader.forEachLine(fd: file.rawValue, path: path, maximumLength: 4096, unterminatedLast: false) { line in
                guard journal != nil else {
                    // The same file by device, inode, size, times: a name used again by a new
                    // file at a reused inode is not the journal's batch. At most one line per
                    // two bytes of input.
                    guard let header = BatchJournal.header(line[...]), header.input.isSameInstance(as: input),
                          Int64(header.lines) <= max(input.size, 0) else { throw Stop() }
                    journal = BatchJournal(header: header)
                    return
                }
                guard journal!.apply(record: line[...]) else { throw Stop() }
            }
        } catch is Stop, is FileReader.LineTooLong {
            // A torn record ends the journal, as its replay does; a header of another file
            // counts nothing.
        }
        guard let journal else { return nil }
        // Counted, not timed: no rate or end time is known without the daemon.
        return BatchProgress(name: name, total: journal.header.lines, succeeded: journal.counts.succeeded, failed: journal.counts.notSucceeded,
                             inFlight: 0, startedAt: Double(journal.header.createdAt), updatedAt: Double(journal.header.createdAt), cancelled: false)
    }

    private func object(_ path: String) -> [String: Any]? {
        do {
            return JSONObject.parse(try FileReader.prefix(path: path, limit: 16 << 20))
        } catch {
            return nil
        }
    }
}
