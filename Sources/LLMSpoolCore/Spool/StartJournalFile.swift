import Glibc
import LLMSpoolModel
import LLMSpoolSystem

/// `state/.starts` and `.starts.old` (`StartJournal`) on a local spool: appended by the
/// engine's thread alone, which owns this object; read back by the next start, before
/// anything is sent. Like the start record it replaces, not fsynced: a kill -9 leaves the
/// bytes in the page cache, and a power loss is not a request's doing.
final class StartJournalFile {
    /// A start not ended yet, as a new generation copies it.
    typealias Start = (record: TaskRecord, requestPath: String)

    private let layout: SpoolLayout
    private let logger: Logger
    private var file: FileDescriptor?
    /// The current generation's length as written here (the only writer): a failed append
    /// is cut back to it, so that no torn frame hides the frames after it.
    private var length = 0
    private var framesSinceTurn = 0
    /// When (monotonic seconds) the open file was last seen to still have its name.
    private var lastLinkCheck = -Double.infinity
    /// The most read of each generation at a replay: a generation holds about twice the
    /// starts in flight (at most tens of thousands of frames of a few hundred bytes).
    static let readLimit = 64 << 20
    /// How often the file is checked for its name: `state/` removed while running would
    /// leave appends going to a file no restart can read.
    static let linkCheckSeconds = 0.1

    init(layout: SpoolLayout, logger: Logger) {
        self.layout = layout
        self.logger = logger
    }

    /// Appends the start `record` of the request at `requestPath`, before it is sent.
    /// `notEnded` lists the other starts not ended yet, for a new generation begun first
    /// (the first append, or the file lost its name or its descriptor).
    func append(_ record: TaskRecord, requestPath: String, now: Double, notEnded: () -> [Start]) throws {
        if file != nil, now - lastLinkCheck >= StartJournalFile.linkCheckSeconds {
            lastLinkCheck = now
            if let fd = file?.rawValue, try HeldFile.lostName(fd, path: layout.startJournal) {
                logger.warning("the start journal was removed or moved while running; a new one begins", ["path": LogValue(layout.startJournal)])
                file = nil
            }
        }
        if file == nil {
            try beginGeneration(with: notEnded())
            lastLinkCheck = now
        }
        guard let fd = file?.rawValue else { return }
        let frame = StartJournal.frame(name: StartJournalFile.name(of: requestPath), record: record.encoded())
        do {
            try Syscall.writeAll(fd, frame, path: layout.startJournal)
        } catch {
            // A full disk may take part of the frame: cut it off, or start afresh next time.
            do {
                try Syscall.ftruncate(fd, length: length, path: layout.startJournal)
            } catch {
                file = nil
            }
            throw error
        }
        length += frame.count
        framesSinceTurn += 1
    }

    /// Begins a new generation once the current one is long enough (`StartJournal.isTimeToTurn`),
    /// opening with `notEnded()`. A failure is logged: the current generation goes on growing,
    /// or, when it lost its name half-way, a new one is begun at the next append.
    func turnIfDue(inFlightCount: Int, notEnded: () -> [Start]) {
        guard file != nil, StartJournal.isTimeToTurn(framesSinceTurn: framesSinceTurn, inFlight: inFlightCount) else { return }
        framesSinceTurn = 0
        do {
            try beginGeneration(with: notEnded())
        } catch {
            logger.warning("cannot begin a new generation of the start journal", ["reason": "\(error)"])
        }
    }

    /// Writes `starts` to a temporary, then makes the current generation `.starts.old` and the
    /// temporary `.starts`: at any point every start not ended is under one of the two names.
    private func beginGeneration(with starts: [Start]) throws {
        let temporary = SpoolLayout.temporary(for: layout.startJournal)
        let next = try FileDescriptor.createNew(temporary, O_WRONLY | O_APPEND, mode: mode_t(layout.fileMode))
        let written: Int
        do {
            written = try StartJournalFile.write(starts, to: next)
        } catch {
            logger.bestEffort("removing an unfinished start journal") { try Syscall.unlinkIfPresent(temporary) }
            throw error
        }
        do {
            try Syscall.rename(layout.startJournal, layout.previousStartJournal)
        } catch let error as SystemError where error.errno == ENOENT {
            // The first generation of this run, or `state/` was removed: nothing to keep.
        } catch {
            logger.bestEffort("removing an unfinished start journal") { try Syscall.unlinkIfPresent(temporary) }
            throw error
        }
        do {
            try Syscall.rename(temporary, layout.startJournal)
        } catch {
            // The current generation is `.starts.old` now: appends to it would be read, but
            // the next turn would replace it. A new generation is begun at the next append.
            file = nil
            logger.bestEffort("removing an unfinished start journal") { try Syscall.unlinkIfPresent(temporary) }
            throw error
        }
        file = consume next
        length = written
    }

    /// Writes the frames of `starts`, a MiB at a time; returns how many bytes.
    private static func write(_ starts: [Start], to file: borrowing FileDescriptor) throws -> Int {
        var written = 0
        var bytes: [UInt8] = []
        for start in starts {
            bytes += StartJournal.frame(name: name(of: start.requestPath), record: start.record.encoded())
            if bytes.count >= 1 << 20 {
                try file.writeAll(bytes)
                written += bytes.count
                bytes.removeAll(keepingCapacity: true)
            }
        }
        try file.writeAll(bytes)
        return written + bytes.count
    }

    /// At a start, before the watcher: writes the record of every start that never ended
    /// (`StartJournal.fate`), then removes the journal. Returns how many records were written.
    /// After a crash `CrashGuard` counts each such start. After a stop or a `kill -9` the
    /// engine clears the count as it reads the record (`TransferEngine.previousRunCrashed`),
    /// and the record still keeps the request's `first_seen`, from which `max_lifetime_seconds`
    /// runs: dropped unread, a stop during a first attempt started that clock again.
    @discardableResult
    static func replay(layout: SpoolLayout, previousRunCrashed: Bool, logger: Logger) -> Int {
        var written = 0
        do {
            var generations: [[UInt8]] = []
            let paths = [layout.previousStartJournal, layout.startJournal]
            for path in paths {
                do {
                    generations.append(try FileReader.prefix(path: path, limit: StartJournalFile.readLimit))
                } catch let error as SystemError where error.errno == ENOENT {
                    generations.append([])
                } catch {
                    logger.warning(previousRunCrashed ? "cannot read the start journal; starts of requests in flight at the crash are not counted"
                                                      : "cannot read the start journal; requests in flight when the last run ended get a new first_seen",
                                   ["file": LogValue(path), "reason": "\(error)"])
                    generations.append([])
                }
            }
            let (starts, unread) = StartJournal.lastStarts(in: generations)
            for (path, bytes) in zip(paths, unread) where bytes > 0 {
                logger.warning("the start journal ends in bytes that are not a start; they are ignored",
                               ["file": LogValue(path), "bytes": "\(bytes)"])
            }
            for frame in starts {
                guard let started = TaskRecord.decode(frame.record), StartJournal.recordMatches(name: frame.name, id: started.id) else {
                    logger.warning("a start in the start journal does not name its request; ignored", ["name": LogValue(frame.name)])
                    continue
                }
                let path = layout.outgoing + "/" + frame.name
                let present = logger.bestEffortValue("looking at a request started before the crash", id: started.id) {
                    try SpoolFiles(layout: layout).identity(of: path)
                } ?? nil
                let isTheOne = present.map { file in started.request.map { $0.isSameInstance(as: file) } ?? true } ?? false
                guard StartJournal.fate(started: started, current: isTheOne ? TaskRecord.load(layout, id: started.id) : nil,
                                        requestIsTheOneStarted: isTheOne) == .write else { continue }
                do {
                    try started.write(layout, durable: false)
                    written += 1
                } catch {
                    logger.warning("cannot record a start made by the last run", id: started.id, ["reason": "\(error)"])
                }
            }
        }
        drop(layout: layout, logger: logger)
        return written
    }

    /// Removes the journal's files.
    static func drop(layout: SpoolLayout, logger: Logger) {
        for path in [layout.startJournal, layout.previousStartJournal, SpoolLayout.temporary(for: layout.startJournal)] {
            logger.bestEffort("removing the start journal of the previous run") { try Syscall.unlinkIfPresent(path) }
        }
    }

    private static func name(of requestPath: String) -> String {
        guard let slash = requestPath.lastIndex(of: "/") else { return requestPath }
        return String(requestPath[requestPath.index(after: slash)...])
    }
}
