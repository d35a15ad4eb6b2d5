import Glibc

/// Writes the cancelled output lines of a batch whose input left while no daemon ran it:
/// its lines never committed, named from its `BatchIDList`, committed in groups as a
/// running batch's lines are (output fsynced, then journal), so that a crash midway goes
/// on from the journal and no line is written twice.
struct BatchOrphanCanceller {
    /// What came of it.
    enum Outcome {
        /// Every line is committed now: the batch can be published.
        case filled(BatchJournal)
        /// No usable list (`BatchOrphanRules.Naming`): published with the lines it had.
        case committedOnly(BatchJournal, reason: String)
        /// A write failed (a full disk): nothing of the last group counts; the batch is
        /// ended on a later sweep.
        case failed(BatchJournal, reason: String)
        /// The claim is another daemon's now: it ends the batch from the journal.
        case lost(BatchJournal)
    }

    let layout: SpoolLayout
    let logger: Logger
    /// `max_request_bytes`: no id of the list is longer.
    let maxLineBytes: Int
    /// Lines committed together.
    static let groupSize = 4096
    static let chunkBytes = 1 << 20

    /// `journal` is the batch's, replayed; its output is already cut back to the journal's
    /// length. `stillMine` is asked before each group, on a shared spool.
    func fill(_ name: String, journal: BatchJournal, stillMine: () -> Bool) -> Outcome {
        var journal = journal
        let listPath = layout.batchIDList(name)
        let list: FileDescriptor
        do {
            list = try FileDescriptor.open(listPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch let error as SystemError where error.errno == ENOENT {
            return .committedOnly(journal, reason: reason(BatchOrphanRules.naming(listPresent: false, listProblem: nil)))
        } catch {
            return .failed(journal, reason: "\(error)")
        }
        // Read through once first: a list found damaged halfway must not have named half the lines.
        var check = BatchIDList.Reader(header: journal.header, maxLineBytes: maxLineBytes)
        do {
            try read(list.rawValue, path: listPath) { _ = check.add($0) }
        } catch {
            return .failed(journal, reason: "\(error)")
        }
        if case .committedOnly(let why) = BatchOrphanRules.naming(listPresent: true, listProblem: check.finish()) {
            return .committedOnly(journal, reason: why)
        }
        let outputPath = layout.batchPartial(name)
        let journalPath = layout.batchJournal(name)
        let output: FileDescriptor
        do {
            output = try FileDescriptor.open(outputPath, O_WRONLY | O_APPEND | O_NOFOLLOW)
        } catch {
            return .failed(journal, reason: "\(error)")
        }
        let journalFile: FileDescriptor
        do {
            journalFile = try FileDescriptor.open(journalPath, O_WRONLY | O_APPEND | O_NOFOLLOW)
        } catch {
            return .failed(journal, reason: "\(error)")
        }
        do {
            // A torn last record (a crash during an append) goes before anything follows it.
            try Syscall.ftruncate(journalFile.rawValue, length: journal.validLength, path: journalPath)
        } catch {
            return .failed(journal, reason: "\(error)")
        }
        let outputFD = output.rawValue
        let journalFD = journalFile.rawValue
        var reader = BatchIDList.Reader(header: journal.header, maxLineBytes: maxLineBytes)
        var group: [(entry: Int, customID: String)] = []
        var stopped: Outcome?
        func commit() -> Outcome? {
            defer { group.removeAll(keepingCapacity: true) }
            guard !group.isEmpty else { return nil }
            guard stillMine() else { return .lost(journal) }
            let (bytes, entries) = BatchOrphanRules.cancelledGroup(group, journal: journal, batch: name)
            guard !entries.isEmpty else { return nil }
            do {
                try Syscall.writeAll(outputFD, bytes, path: outputPath)
                try Syscall.fdatasync(outputFD, path: outputPath)
                try Syscall.writeAll(journalFD, entries.flatMap(BatchJournal.encode), path: journalPath)
                try Syscall.fdatasync(journalFD, path: journalPath)
            } catch {
                // Nothing of this group counts (the journal says so); the output goes back to it.
                logger.bestEffort("cutting the output back", id: name) {
                    try Syscall.ftruncate(outputFD, length: journal.outputLength, path: outputPath)
                }
                return .failed(journal, reason: "\(error)")
            }
            for entry in entries { journal.apply(entry) }
            return nil
        }
        do {
            try read(list.rawValue, path: listPath) { chunk in
                guard stopped == nil else { return }
                for id in reader.add(chunk) {
                    group.append(id)
                    if group.count >= Self.groupSize, let outcome = commit() {
                        stopped = outcome
                        return
                    }
                }
            }
        } catch {
            return .failed(journal, reason: "\(error)")
        }
        if let stopped { return stopped }
        if let problem = reader.finish() { return .failed(journal, reason: "the list of custom_ids changed while it was read: \(problem)") }
        if let outcome = commit() { return outcome }
        return .filled(journal)
    }

    private func reason(_ naming: BatchOrphanRules.Naming) -> String {
        if case .committedOnly(let reason) = naming { return reason }
        return ""
    }

    private func read(_ fd: Int32, path: String, _ body: (ArraySlice<UInt8>) -> Void) throws {
        var position = 0
        while true {
            let chunk = try Syscall.preadAll(fd, count: Self.chunkBytes, at: position, path: path)
            if chunk.isEmpty { return }
            body(chunk[...])
            position += chunk.count
        }
    }
}
