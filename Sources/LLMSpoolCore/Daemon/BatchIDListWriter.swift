import Glibc

/// Writes a batch's `BatchIDList` while the batch is validated, to a hidden temporary that
/// is put in place once the journal exists (a list is never newer than the journal it goes
/// with). A write that fails (a full disk) stops it, logged once and naming the batch: the
/// batch runs all the same, without its list.
final class BatchIDListWriter {
    private let name: String
    private let path: String
    private let temporary: String
    private let batches: String
    private let logger: Logger
    private var file: FileDescriptor?
    private var buffer: [UInt8] = BatchIDList.opening
    /// Put in place: `discard` leaves it.
    private var kept = false

    init(layout: SpoolLayout, name: String, logger: Logger) {
        self.name = name
        self.logger = logger
        path = layout.batchIDList(name)
        temporary = SpoolLayout.temporary(for: path)
        batches = layout.batches
        do {
            try SpoolFiles(layout: layout).ensureFolder(layout.batches)
            file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: layout.fileMode)
        } catch {
            fail(error)
        }
    }

    /// The next line's id (lines come in entry order).
    func add(_ customID: String) {
        guard file != nil else { return }
        buffer += BatchIDList.encode(customID)
        if buffer.count >= 1 << 20 { flush() }
    }

    /// Ends the list with the trailer of `header` (the journal's, already durable) and puts it
    /// in place. False when there is no list.
    @discardableResult
    func keep(for header: BatchJournal.Header) -> Bool {
        guard file != nil else { return false }
        buffer += BatchIDList.trailer(for: header)
        flush()
        do {
            guard let written = file.take() else { return false }
            try Syscall.fdatasync(written.rawValue, path: temporary)
            // Checked: a network filesystem may say only at close that the bytes are lost.
            try written.close()
            try Syscall.rename(temporary, path)
            try Syscall.fsyncDirectory(batches)
            kept = true
            return true
        } catch {
            fail(error)
            return false
        }
    }

    /// The batch was not accepted this time (invalid, changed, not read whole): no list.
    func discard() {
        guard !kept else { return }
        file = nil
        logger.bestEffort("removing an unfinished list of custom_ids", id: name) { try Syscall.unlinkIfPresent(temporary) }
    }

    private func flush() {
        guard let fd = file?.rawValue, !buffer.isEmpty else { return }
        do {
            try Syscall.writeAll(fd, buffer, path: temporary)
            buffer.removeAll(keepingCapacity: true)
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: any Error) {
        logger.warning("cannot keep the batch's custom_ids; should its input be deleted while no daemon runs it, its output holds only the lines committed by then",
                       id: name, ["reason": "\(error)", "list": LogValue(path)])
        file = nil
        buffer = []
        logger.bestEffort("removing an unfinished list of custom_ids", id: name) { try Syscall.unlinkIfPresent(temporary) }
    }
}
