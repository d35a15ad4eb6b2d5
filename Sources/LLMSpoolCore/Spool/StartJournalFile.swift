import Glibc
import LLMSpoolModel
import LLMSpoolSystem

/// `state/.starts` and `.starts.old` (`StartJournal`) on a local spool: appended by the
/// engine's thread alone, which owns this object; read back by the next start, before
/// anything is sent. Like the start record it replaces, not fsynced: a kill -9 leaves the
/// bytes in the page cache, and a power loss is not a request's doing.
final class StartJournalFile {
    private let layout: SpoolLayout
    private var file: FileDescriptor?
    private var framesSinceTurn = 0

    init(layout: SpoolLayout) {
        self.layout = layout
    }

    /// Appends the start `record` of the request at `requestPath`, before it is sent.
    func append(_ record: TaskRecord, requestPath: String) throws {
        if file == nil {
            file = try FileDescriptor.open(layout.startJournal, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, mode: mode_t(layout.fileMode))
        }
        guard let fd = file?.rawValue else { return }
        try Syscall.writeAll(fd, StartJournal.frame(name: StartJournalFile.name(of: requestPath), record: record.encoded()),
                             path: layout.startJournal)
        framesSinceTurn += 1
    }

    /// Begins a new generation once the current one is long enough (`StartJournal.isTimeToTurn`):
    /// the current becomes `.starts.old` and the new one opens with `inFlight`'s starts, the
    /// attempts not ended, so that none of them is forgotten when `.starts.old` is replaced.
    /// A failure is logged and the current generation goes on growing.
    func turnIfDue(inFlightCount: Int, inFlight: () -> [(record: TaskRecord, requestPath: String)], logger: Logger) {
        guard file != nil, StartJournal.isTimeToTurn(framesSinceTurn: framesSinceTurn, inFlight: inFlightCount) else { return }
        let temporary = SpoolLayout.temporary(for: layout.startJournal)
        do {
            let next = try FileDescriptor.createNew(temporary, O_WRONLY | O_APPEND, mode: mode_t(layout.fileMode))
            var bytes: [UInt8] = []
            for start in inFlight() {
                bytes += StartJournal.frame(name: StartJournalFile.name(of: start.requestPath), record: start.record.encoded())
                if bytes.count >= 1 << 20 {
                    try next.writeAll(bytes)
                    bytes.removeAll(keepingCapacity: true)
                }
            }
            try next.writeAll(bytes)
            // Kept in this order, a crash at any point leaves every unended start in one of
            // the two names: the current generation is `.starts.old` before the new one,
            // holding the starts in flight, is `.starts`.
            try Syscall.rename(layout.startJournal, layout.previousStartJournal)
            try Syscall.rename(temporary, layout.startJournal)
            file = consume next
            framesSinceTurn = 0
        } catch {
            logger.warning("cannot begin a new generation of the start journal; the current one grows", ["reason": "\(error)"])
            logger.bestEffort("removing an unfinished start journal") { try Syscall.unlinkIfPresent(temporary) }
            framesSinceTurn = 0
        }
    }

    /// At a start, before the watcher: after a crash, writes the record of every start that
    /// never ended (`StartJournal.fate`), so that `CrashGuard` counts it; then, crash or not,
    /// removes the journal. Returns how many records were written.
    @discardableResult
    static func replay(layout: SpoolLayout, previousRunCrashed: Bool, logger: Logger) -> Int {
        var written = 0
        if previousRunCrashed {
            var frames: [StartJournal.Frame] = []
            for path in [layout.previousStartJournal, layout.startJournal] {
                do {
                    frames += StartJournal.frames(try FileReader.prefixOfRegularFile(path: path, limit: 256 << 20))
                } catch let error as SystemError where error.errno == ENOENT {
                } catch {
                    logger.warning("cannot read the start journal; starts of requests in flight at the crash are not counted",
                                   ["file": LogValue(path), "reason": "\(error)"])
                }
            }
            for frame in StartJournal.lastStarts(frames) {
                guard let started = TaskRecord.decode(frame.record), !frame.name.contains("/") else { continue }
                let path = layout.outgoing + "/" + frame.name
                let present = logger.bestEffortValue("looking at a request started before the crash", id: started.id) {
                    try SpoolFiles(layout: layout).identity(of: path)
                } ?? nil
                let isTheOne = present.map { file in started.request.map { $0.isSameInstance(as: file) } ?? true } ?? false
                guard StartJournal.fate(started: started, current: TaskRecord.load(layout, id: started.id),
                                        requestIsTheOneStarted: isTheOne) == .write else { continue }
                do {
                    try started.write(layout, durable: false)
                    written += 1
                } catch {
                    logger.warning("cannot record a start made before the crash", id: started.id, ["reason": "\(error)"])
                }
            }
        }
        for path in [layout.startJournal, layout.previousStartJournal, SpoolLayout.temporary(for: layout.startJournal)] {
            logger.bestEffort("removing the start journal of the previous run") { try Syscall.unlinkIfPresent(path) }
        }
        return written
    }

    private static func name(of requestPath: String) -> String {
        guard let slash = requestPath.lastIndex(of: "/") else { return requestPath }
        return String(requestPath[requestPath.index(after: slash)...])
    }
}
