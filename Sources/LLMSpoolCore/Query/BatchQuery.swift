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
        if Syscall.isPresent(layout.failedBatch(name)), let record = object(layout.errorRecord(name)) {
            return .refused(record: record, path: layout.errorRecord(name))
        }
        return .unknown
    }

    /// Whether `show` should take `name` for a batch's.
    public func isBatch(_ name: String) -> Bool {
        state(of: name) != .unknown
    }

    /// `show <name>` for a batch: the summary once it ended, the record of a refusal, or the
    /// running counts.
    public func show(_ name: String) -> [String: Any] {
        switch state(of: name) {
        case .ended(let summary, let path):
            return ["batch": name, "state": "ended", "summary_file": path, "output": layout.batchOutput(name), "summary": summary]
        case .refused(let record, let path):
            return ["batch": name, "state": "refused", "record_file": path, "record": record]
        case .running(let progress):
            var details: [String: Any] = ["batch": name, "state": "running", "input": layout.batchRequest(name),
                                          "partial_output": layout.batchPartial(name)]
            if let progress, let object = JSONObject.parse(progress.json()) { details["progress"] = object }
            return details
        case .unknown:
            return ["batch": name, "state": "unknown"]
        }
    }

    /// The batches in `outgoing` as their journals count them, for `status` when no daemon
    /// reports (none runs, or the one running is stopped): nil counts for a batch not begun
    /// yet, or whose journal is of an earlier file of the name. Nothing in flight is known.
    public func fromJournals() -> [(name: String, progress: BatchProgress?)] {
        // A view: a folder that is not there holds no batch.
        ((try? Syscall.listDirectory(layout.outgoing)) ?? []).sorted().compactMap { file in
            guard case .batch(let name) = RequestName.classify(file), let input = try? Syscall.lstat(layout.batchRequest(name)) else { return nil }
            let journalPath = layout.batchJournal(name)
            // No journal, or one that cannot be read: the batch is not counted yet.
            guard let bytes = try? FileReader.prefix(path: journalPath, limit: 1 << 30), let journal = BatchJournal.replay(bytes),
                  journal.header.input.device == UInt64(input.st_dev), journal.header.input.inode == UInt64(input.st_ino),
                  let written = try? Syscall.lstat(journalPath) else { return (name, nil) }
            return (name, BatchProgress(name: name, total: journal.header.lines, succeeded: journal.counts.succeeded,
                                        failed: journal.counts.notSucceeded, inFlight: 0, startedAt: Double(journal.header.createdAt),
                                        updatedAt: Double(written.st_mtim.tv_sec), cancelled: false))
        }
    }

    private func object(_ path: String) -> [String: Any]? {
        do {
            return JSONObject.parse(try FileReader.prefix(path: path, limit: 16 << 20))
        } catch {
            return nil
        }
    }
}
