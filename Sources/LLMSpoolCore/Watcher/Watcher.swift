import CInotifyTools
import Foundation
import Glibc
import Synchronization

/// Finds requests in `outgoing`: inotify for speed, directory scans as the truth. The
/// watch is added before the first scan, so nothing dropped while the daemon was starting
/// is missed; overflow and loss of the folder trigger a rescan, and so does a timer. On a
/// network share it polls. It pauses intake while the spool's filesystem is nearly full,
/// and gives a file that is not yet valid a settle period before judging it.
///
/// libinotifytools keeps process-global state and is not thread-safe, so every call into
/// it happens on this object's own thread.
public final class Watcher: @unchecked Sendable {
    // @unchecked Sendable holds because every `var` below and the library's state are
    // touched only on the watcher thread; `stopRequested` is atomic, `known` locks itself,
    // `startError` is a Mutex and the rest is immutable.

    /// What the watcher tells the daemon.
    public struct Delegate: Sendable {
        public var found: @Sendable (Intake) -> Void
        /// A request file left `outgoing`: its id and the path it had.
        public var removed: @Sendable (_ id: String, _ path: String) -> Void
        /// A batch file `outgoing/<name>.jsonl` was found or changed.
        public var foundBatch: @Sendable (_ name: String) -> Void = { _ in }
        /// A batch file left `outgoing`.
        public var removedBatch: @Sendable (_ name: String) -> Void = { _ in }

        public init(found: @escaping @Sendable (Intake) -> Void, removed: @escaping @Sendable (String, String) -> Void) {
            self.found = found
            self.removed = removed
        }
    }

    /// The watcher's settings.
    public struct Settings: Sendable {
        public var mode = WatchMode.auto
        public var pollInterval = 1.0
        public var rescanInterval = 60.0
        public var settleSeconds = 2.0
        /// How long a file a producer still holds open for writing waits for its close,
        /// counted from its last write (`OpenWriters`).
        public var openWriterGraceSeconds = OpenWriters.defaultGraceSeconds
        public var minFreeBytes: UInt64 = 64 << 20
        public var maxRequestBytes = 32 << 20
        public var maxJSONDepth = RequestValidator.defaultMaxDepth
        public var formats = FormatContext(yaml: LibYAML.reader)
        /// Results may carry their request's mark (the one-fsync commit order): the restart
        /// decision reads it.
        public var markedResults = false

        public init() {}

        public init(_ config: Config) {
            mode = config.watchMode
            pollInterval = config.pollIntervalSeconds
            rescanInterval = config.rescanIntervalSeconds
            settleSeconds = config.settleSeconds
            openWriterGraceSeconds = max(OpenWriters.defaultGraceSeconds, config.settleSeconds)
            minFreeBytes = config.minFreeBytes
            maxRequestBytes = config.maxRequestBytes
            maxJSONDepth = config.maxJSONDepth
            formats = config.formatContext
        }
    }

    /// IN_MODIFY tells which files a producer is still writing (`OpenWriters`).
    private static let watchedEvents = Int32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// Validation problems a writer still at work can cause; others are final at once.
    private static let unsettledKinds: Set<RequestProblem.Kind> = [.invalidJSON, .notUTF8, .notAnObject, .missingField, .wrongType,
                                                                        .invalidFrontMatter, .invalidPrompt]

    private let layout: SpoolLayout
    private let settings: Settings
    private let delegate: Delegate
    private let known: KnownTasks
    private let metrics: Metrics
    private let logger: Logger
    /// The claims of a spool several daemons share; nil when this daemon has it alone.
    private let leases: LeaseManager?
    private let stopRequested = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    private let ready = DispatchSemaphore(value: 0)
    private let startError = Mutex<String?>(nil)
    /// Names of requests the engine found claimed by another daemon (`claimedElsewhere`).
    private let claimedElsewhereInbox = Mutex<[String]>([])
    /// Names the engine asked to be read again (`readAgain`).
    private let readAgainInbox = Mutex<[String]>([])

    private var mode = WatchMode.inotify
    private var lastScan = 0.0
    /// Whether the error that outgoing is not made again (the spool's names lead elsewhere) was logged for this outage.
    private var toldOutgoingNotMade = false
    private var reportedUnusable = Set<String>()
    /// Files not yet valid, or still open for writing, by name: when to look at them again.
    private var settling: [String: Double] = [:]
    /// Files inotify saw made or written and not yet closed: read at their close.
    private var writers = OpenWriters()
    /// Set while `handleQueuedEvents` runs.
    private var handlingQueued = false
    /// Drafts already logged, by name, with the identity they had: logged once per save.
    private var drafts: [String: FileIdentity] = [:]
    /// What `lstat` said of each request file when it was last read, by name: a file of a
    /// held id is read again only if this changed (`IntakeRereadRule`).
    private var lastRead: [String: IntakeRereadRule.Snapshot] = [:]
    /// Names seen by the last poll, to notice removals without inotify.
    private var polledNames = Set<String>()
    /// Watching with inotify: requests held by another daemon's claim, looked at again
    /// soon (polling looks at every name each interval anyway).
    private var heldElsewhere = ClaimRecheckQueue()
    /// Set when a look finds a claim whose holder is gone.
    private var foundAbandoned = false
    /// Why intake is paused, for the live status (`status` shows it); nil while it runs.
    /// Written by the watcher thread, read by the status writer.
    public let intakePause = Mutex<String?>(nil)
    private var intakePaused: Bool { intakePause.withLock { $0 != nil } }
    private var lastSpaceCheck = -1.0
    /// Whether the last look at free space failed (logged once until it works again).
    private var freeSpaceUnknown = false

    public init(layout: SpoolLayout, settings: Settings, known: KnownTasks, metrics: Metrics = Metrics(), leases: LeaseManager? = nil,
                delegate: Delegate, logger: Logger) {
        self.leases = leases
        self.layout = layout
        self.settings = settings
        self.known = known
        self.metrics = metrics
        self.delegate = delegate
        self.logger = logger
    }

    /// Starts the thread; returns once the watch is in place (or throws why it is not).
    public func start() throws {
        NamedThread.start("watcher") { [self] in run() }
        ready.wait()
        if let message = startError.withLock({ $0 }) {
            stopped.wait()
            throw ConfigError(message)
        }
    }

    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        stopped.wait()
    }

    private var stopping: Bool { stopRequested.load(ordering: .relaxed) }

    private static func now() -> Double { Date().timeIntervalSince1970 }

    private func run() {
        defer {
            inotifytools_cleanup()
            stopped.signal()
        }
        let resolved = WatchMode.resolve(settings.mode, path: layout.outgoing)
        mode = resolved.mode
        if mode == .inotify {
            // The library waits with select(), so its descriptor must stay below FD_SETSIZE:
            // it is initialised before the transfer engine opens any sockets.
            if inotifytools_initialize() == 0 {
                fallBackToPolling("cannot start inotify: \(String(cString: strerror(inotifytools_error())))")
            } else if !addWatch() {
                fallBackToPolling("cannot watch \(layout.outgoing): \(String(cString: strerror(inotifytools_error()))) (is fs.inotify.max_user_watches exhausted?)")
            } else {
                logger.info("watching with inotify", ["reason": LogValue(resolved.reason)])
            }
        } else {
            logger.info("watching by polling", ["reason": LogValue(resolved.reason), "interval_seconds": "\(settings.pollInterval)"])
        }
        guard Syscall.isPresent(layout.outgoing) else {
            startError.withLock { $0 = "\(layout.outgoing) does not exist" }
            ready.signal()
            return
        }
        ready.signal()
        scan(reason: "start")
        while !stopping {
            metrics.watcherAlive()
            if mode == .inotify {
                // Whole seconds only; 1 s bounds how long stop() and the settle checks wait.
                if let event = inotifytools_next_events(1, 1) { handle(event) }
                if Watcher.now() - lastScan >= settings.rescanInterval { scan(reason: "periodic") }
            } else {
                usleep(UInt32(min(settings.pollInterval, 1) * 1_000_000))
                if Watcher.now() - lastScan >= settings.pollInterval { scan(reason: "poll") }
            }
            recheckSettling()
            recheckClaims()
            readAgainAsked()
            if intakePaused && hasFreeSpace() { scan(reason: "free space is back") }
        }
    }

    private func fallBackToPolling(_ reason: String) {
        mode = .poll
        logger.warning("falling back to polling", ["reason": LogValue(reason), "interval_seconds": "\(settings.pollInterval)"])
    }

    private func addWatch() -> Bool {
        inotifytools_watch_file(layout.outgoing, Watcher.watchedEvents) != 0
    }

    private func handle(_ event: UnsafeMutablePointer<inotify_event>) {
        let mask = event.pointee.mask
        if event.pointee.wd == -1 || mask & UInt32(IN_Q_OVERFLOW) != 0 {
            logger.warning("inotify queue overflowed; rescanning outgoing")
            metrics.overflow()
            // What is known of writers stays: a close lost with the queue leaves its entry
            // to the grace, and one that expired goes now.
            writers.prune(now: Watcher.now(), grace: settings.openWriterGraceSeconds)
            scan(reason: "overflow")
            return
        }
        // One of these arrives per loss of the folder; the IN_IGNORED that follows each
        // says only that the old watch is gone.
        if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0 {
            // A deleted or unmounted folder's watch is gone already (IN_IGNORED follows);
            // only a moved one still has a watch to drop.
            writers.forgetAll()
            rewatch(dropping: mask & UInt32(IN_MOVE_SELF) != 0 ? event.pointee.wd : nil)
            return
        }
        if mask & UInt32(IN_IGNORED) != 0 { return }
        guard let pointer = llms_inotify_event_name(event) else { return }
        let raw = Array(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
        if mask & UInt32(IN_CLOSE_WRITE) != 0 {
            guard RequestName.isUTF8(raw) else { return considerRaw(raw, force: true) }
            let closed = String(decoding: raw, as: UTF8.self)
            // A file made with O_TMPFILE closes as `#<inode>`: read under the name it was
            // linked in as (a file a producer named so is its own, and no request).
            guard let name = writers.closed(closed) else { return }
            settling[name] = nil
            considerRaw(Array(name.utf8), force: true)
            return
        }
        if mask & UInt32(IN_MOVED_TO) != 0 {
            // A file still open, renamed within the folder, keeps its writer (the rename's
            // cookie pairs this with its IN_MOVED_FROM). A folder dropped under a request's
            // name is refused like any other non-file.
            if RequestName.isUTF8(raw) { writers.movedHere(String(decoding: raw, as: UTF8.self), cookie: event.pointee.cookie) }
            considerRaw(raw, force: true)
            return
        }
        if mask & UInt32(IN_CREATE) != 0 {
            // Links, FIFOs, sockets, devices and folders are never closed after writing:
            // creation is all they say. A regular file is read when its writer closes it.
            // A hidden name is not looked at whatever it is (a producer's temporary), but its
            // writer is kept: renamed into place while still open, it waits for the close.
            if raw.first == UInt8(ascii: ".") {
                if mask & UInt32(IN_ISDIR) == 0, RequestName.isUTF8(raw) {
                    writers.created(String(decoding: raw, as: UTF8.self), inode: nil, now: Watcher.now())
                }
                return
            }
            let path = Array(layout.outgoing.utf8) + [0x2F] + raw
            do {
                let info = try Syscall.lstat(raw: path)
                if info.st_mode & S_IFMT != S_IFREG || info.st_nlink > 1 {
                    considerRaw(raw, force: true)
                } else if RequestName.isUTF8(raw) {
                    writers.created(String(decoding: raw, as: UTF8.self), inode: UInt64(info.st_ino), now: Watcher.now())
                }
            } catch let error as SystemError where error.errno == ENOENT {
                // Gone again before we looked: nothing to refuse.
            } catch {
                // Read it anyway: reading tells what it is, or reports its own failure.
                logger.warning("cannot look at a new name in outgoing", ["reason": LogValue("\(error)")])
                considerRaw(raw, force: true)
            }
            return
        }
        if mask & UInt32(IN_ISDIR) != 0 { return }
        let name = String(decoding: raw, as: UTF8.self)
        if mask & UInt32(IN_MODIFY) != 0 {
            // Names that are not UTF-8 are renamed to a safe id, then tracked under it.
            if RequestName.isUTF8(raw) { writers.written(name, now: Watcher.now()) }
            return
        }
        if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
            if mask & UInt32(IN_MOVED_FROM) != 0 {
                writers.movedAway(name, cookie: event.pointee.cookie)
            } else {
                writers.forget(name)
            }
            settling[name] = nil
            drafts[name] = nil
            lastRead[name] = nil
            switch RequestName.classify(name) {
            case .request(let id): left(name, id: id)
            case .batch(let batch): delegate.removedBatch(batch)
            default: break
            }
        }
    }

    /// The watched folder was deleted or moved: wait for it to exist again, watch it, rescan.
    private func rewatch(dropping watch: Int32?) {
        logger.warning("outgoing was removed or moved; watching for it again", ["path": LogValue(layout.outgoing)])
        // A moved folder keeps its watch: drop it, or its events would pass for ours. The
        // library prints to stderr when asked to remove a watch the kernel already dropped.
        if let watch, inotifytools_remove_watch_by_wd(watch) == 0 {
            logger.warning("cannot remove the moved folder's watch", ["reason": "\(inotifytools_error())"])
        }
        while !stopping {
            remakeOutgoing()
            if addWatch() {
                logger.info("watching outgoing again", ["path": LogValue(layout.outgoing)])
                scan(reason: "folder recreated")
                return
            }
            usleep(200_000)
        }
    }

    /// Makes `outgoing` (and the spool's other folders) again, unless the spool's names
    /// lead elsewhere: then says so once per outage, as the watch's retries and each
    /// rescan come back here. Whether the folders were made.
    @discardableResult
    private func remakeOutgoing() -> Bool {
        var made = false
        logger.bestEffort("recreating the spool folders") {
            guard let problem = try layout.createUnlessElsewhere() else {
                toldOutgoingNotMade = false
                made = true
                return
            }
            if !toldOutgoingNotMade { logger.error("outgoing is missing and is not made again", ["reason": LogValue(problem)]) }
            toldOutgoingNotMade = true
        }
        return made
    }

    /// Handles what inotify has queued, without waiting, so that a scan knows which files
    /// are still being written (`OpenWriters`): a file made just before it would otherwise
    /// be read half written, its IN_CREATE still in the queue. Bounded, as a producer
    /// writing on and on keeps the queue full; not again from a scan an event started.
    private func handleQueuedEvents() {
        guard mode == .inotify, !handlingQueued else { return }
        handlingQueued = true
        defer { handlingQueued = false }
        var handled = 0
        while handled < 4096, !stopping, let event = inotifytools_next_events(0, 1) {
            handle(event)
            handled += 1
        }
    }

    /// Looks at every name in `outgoing`. Ids the scheduler already holds cost nothing.
    private func scan(reason: String) {
        handleQueuedEvents()
        // After the names are looked at (each says when it is read past its writer's
        // grace): a writer whose close was never seen (lost with an overflow) is forgotten.
        defer { writers.prune(now: Watcher.now(), grace: settings.openWriterGraceSeconds) }
        lastScan = Watcher.now()
        metrics.rescan(reason)
        let raws: [[UInt8]]
        do {
            raws = try Syscall.listDirectoryRaw(layout.outgoing)
        } catch let error as SystemError where error.errno == ENOENT {
            if remakeOutgoing() { logger.warning("outgoing was missing; made again", ["path": LogValue(layout.outgoing)]) }
            return
        } catch {
            logger.error("cannot scan outgoing", ["reason": "\(error)"])
            return
        }
        if reason != "poll" { logger.debug("scanning outgoing", ["reason": LogValue(reason), "entries": "\(raws.count)"]) }
        let names = raws.filter(RequestName.isUTF8).map { String(decoding: $0, as: UTF8.self) }
        if mode == .poll {
            let current = Set(names)
            for gone in polledNames.subtracting(current) {
                drafts[gone] = nil
                lastRead[gone] = nil
                switch RequestName.classify(gone) {
                case .request(let id): left(gone, id: id)
                case .batch(let batch): delegate.removedBatch(batch)
                default: break
                }
            }
            polledNames = current
        }
        for raw in raws where !stopping {
            considerRaw(raw, force: false)
        }
    }

    /// A request another daemon claimed before this one could (any thread): looked at
    /// again with those intake found held.
    public func claimedElsewhere(path: String) {
        claimedElsewhereInbox.withLock { $0.append(PublicationPlan.name(of: path)) }
    }

    /// A request whose start found it saved again (any thread): read again, whatever intake
    /// read last (`TransferEngine.Delegate.readAgain`).
    public func readAgain(path: String) {
        readAgainInbox.withLock { $0.append(PublicationPlan.name(of: path)) }
    }

    private func readAgainAsked() {
        let names = readAgainInbox.withLock { inbox in defer { inbox = [] }; return inbox }
        for name in names where !stopping {
            lastRead[name] = nil
            consider(name, force: true)
        }
    }

    /// Looks again at a few requests another daemon's claim held. One whose holder is gone
    /// is likely not alone (a daemon dies with all its claims): every name is looked at.
    private func recheckClaims() {
        let claimed = claimedElsewhereInbox.withLock { inbox in defer { inbox = [] }; return inbox }
        // Polling looks at every name each interval anyway.
        guard mode == .inotify else { return }
        for name in claimed { heldElsewhere.add(name) }
        let due = heldElsewhere.due(now: Watcher.now())
        guard !due.isEmpty else { return }
        foundAbandoned = false
        for name in due where !stopping { consider(name, force: false) }
        if foundAbandoned {
            logger.info("a claim's holder is gone; looking at every request")
            scan(reason: "abandoned claim")
        }
    }

    /// A request file left `outgoing`. Another file of the same id (`a.md` beside `a.json`)
    /// waited for it (see `RequestFormatRegistry`): it is looked at now.
    private func left(_ name: String, id: String) {
        heldElsewhere.remove(name)
        delegate.removed(id, "\(layout.outgoing)/\(name)")
        for suffix in RequestFormatRegistry.suffixes where id + suffix != name {
            // Read again even if unchanged: the engine keeps one waiting file per id, so
            // another one delivered later may have taken this one's place.
            lastRead[id + suffix] = nil
            if Syscall.isPresent("\(layout.outgoing)/\(id)\(suffix)") { consider(id + suffix, force: true) }
        }
    }

    /// A name as the directory holds it: unsafe names are renamed to a safe id first.
    private func considerRaw(_ raw: [UInt8], force: Bool) {
        guard RequestName.isUTF8(raw) else {
            rename(unsafe: raw, because: "the name is not valid UTF-8")
            return
        }
        let name = String(decoding: raw, as: UTF8.self)
        if case .unsafe(let reason) = RequestName.classify(name) {
            rename(unsafe: raw, because: reason)
            return
        }
        consider(name, force: force)
    }

    /// Gives a request with an unsafe name a safe id: the escaped original name is kept in
    /// `state/<id>.name` (written first, so the renamed file always has it on record),
    /// then the file is renamed within `outgoing`, which brings it back as a new name.
    private func rename(unsafe raw: [UInt8], because reason: String) {
        guard raw.first != UInt8(ascii: "."),
              let suffix = RequestFormatRegistry.suffixes.first(where: { raw.count > $0.utf8.count && Array(raw.suffix($0.utf8.count)) == Array($0.utf8) })
        else { return }
        let id = RequestName.safeID(forRawName: raw)
        let escaped = RequestName.escaped(raw)
        // The logger escapes what it prints: given the escaped name it escaped it twice (`\\x0a`).
        let logged = String(decoding: raw, as: UTF8.self)
        let taken: Bool
        do {
            taken = try Syscall.exists("\(layout.outgoing)/\(id)\(suffix)")
        } catch {
            logger.warning("cannot look for the safe id; will look again", ["file": LogValue(logged), "reason": "\(error)"])
            return
        }
        guard !taken else {
            if reportedUnusable.insert(escaped).inserted {
                logger.warning("left in outgoing: its safe id is taken by a request not finished yet", ["file": LogValue(logged), "safe_id": LogValue(id)])
            }
            return
        }
        do {
            try DurableFile.write(Array(escaped.utf8), to: layout.originalName(id), mode: layout.fileMode)
            try Syscall.rename(in: layout.outgoing, rawName: raw, to: id + suffix)
            logger.warning("renamed a request to a safe id: \(reason)", id: id, ["file": LogValue(logged)])
            if mode == .poll { consider(id + suffix, force: false) }
        } catch {
            if reportedUnusable.insert(escaped).inserted {
                logger.error("cannot rename a request with an unsafe name; left in place", ["file": LogValue(logged), "reason": "\(error)"])
            }
        }
    }

    private func recheckSettling() {
        guard !settling.isEmpty else { return }
        let now = Watcher.now()
        for (name, due) in settling where due <= now {
            settling[name] = nil
            consider(name, force: true)
        }
    }

    /// Whether a producer still holds `name` open for writing: then it is looked at again at
    /// its close, or once it has gone unwritten for the grace period.
    private func waitsForItsWriter(_ name: String) -> Bool {
        guard let until = writers.waitUntil(name, now: Watcher.now(), grace: settings.openWriterGraceSeconds) else {
            if writers.isTracked(name) {
                // Said, as a request read so may be cut short by the writer's next write.
                logger.info("read although its writer still holds it open: it was not written for \(Int(settings.openWriterGraceSeconds)) s",
                            ["file": LogValue(name)])
                writers.forget(name)
            }
            return false
        }
        settling[name] = until
        return true
    }

    /// Whether the spool's filesystem has room above the floor; checked at most once a second.
    private func hasFreeSpace() -> Bool {
        let now = Watcher.now()
        guard now - lastSpaceCheck >= 1 || lastSpaceCheck < 0 else { return !intakePaused }
        lastSpaceCheck = now
        let free: UInt64
        do {
            free = try Syscall.freeBytes(path: layout.root)
        } catch {
            // Intake is not held back by a filesystem that cannot report its room: the
            // writes themselves still fail cleanly on a full disk.
            if !freeSpaceUnknown {
                freeSpaceUnknown = true
                logger.warning("cannot read the spool's free space; intake goes on", ["reason": LogValue("\(error)")])
            }
            return true
        }
        freeSpaceUnknown = false
        let enough = free >= settings.minFreeBytes
        if enough && intakePaused {
            intakePause.withLock { $0 = nil }
            logger.info("intake resumed", ["free_bytes": "\(free)", "min_free_bytes": "\(settings.minFreeBytes)"])
        } else if !enough && !intakePaused {
            intakePause.withLock { $0 = "the spool's filesystem has \(free) bytes free, below min_free_bytes \(settings.minFreeBytes): new files are read when room is back" }
            logger.warning("intake paused: the spool's filesystem is nearly full", ["free_bytes": "\(free)", "min_free_bytes": "\(settings.minFreeBytes)"])
        }
        return enough
    }

    /// Reads and validates one candidate; the scheduler decides whether it is new.
    /// `force` reads it even when its id is known (an inotify event says it changed).
    private func consider(_ name: String, force: Bool) {
        switch RequestName.classify(name) {
        case .ignored:
            return
        case .unusable(let reason):
            if reportedUnusable.insert(name).inserted {
                logger.warning("left in outgoing: \(reason)", ["file": LogValue(name)])
            }
        case .unsafe(let reason):
            rename(unsafe: Array(name.utf8), because: reason)
        case .batch(let batch):
            guard !waitsForItsWriter(name), hasFreeSpace() else { return }
            delegate.foundBatch(batch)
        case .request(let id):
            // A file of a known id under another name (`a.md` while `a.json` runs) waits:
            // it is looked at when the other one leaves `outgoing` (`left`).
            let isKnown = known.contains(id)
            if !force && isKnown { return }
            if waitsForItsWriter(name) { return }
            let path = "\(layout.outgoing)/\(name)"
            // One look at the file serves the reread rule and the read's own check; when it
            // fails, the read looks again and reports why.
            let seen = try? Syscall.lstat(path)
            let snapshot = seen.map(Watcher.snapshot)
            guard IntakeRereadRule.mustRead(known: isKnown, lastRead: lastRead[name], current: snapshot) else { return }
            var abandoned = false
            if let leases {
                switch leases.look(id) {
                case .heldElsewhere:
                    if mode == .inotify { heldElsewhere.add(name) }
                    return
                case .abandoned:
                    abandoned = true
                    foundAbandoned = true
                case .free: break
                }
            }
            guard hasFreeSpace() else { return }
            metrics.intakeRead()
            // Kept only for what is delivered (a draft or a file still settling is looked at
            // again whatever lstat says); taken before the read, so that a change during it
            // shows as a difference next time.
            lastRead[name] = nil
            // On a shared spool the claim's look (network round trips) lies between: the read
            // looks again, so that a file renamed over this one meanwhile is not taken for one
            // replaced while it was opened.
            switch RequestFile.read(path: path, limit: settings.maxRequestBytes, seen: leases == nil ? seen : nil) {
            case nil:
                return  // gone already
            case .failure(let problem)? where problem.kind == .transient:
                // Left in outgoing: the next scan tries again.
                logger.warning("request not read this time; it stays in outgoing", id: id, ["reason": LogValue(problem.message)])
                lastScan = min(lastScan, Watcher.now() - settings.rescanInterval + 1)
            case .failure(let problem)?:
                lastRead[name] = snapshot
                delegate.found(.invalid(id: id, requestPath: path, problem: problem))
            case .success(let loaded)?:
                guard let intake = Watcher.intake(id: id, path: path, loaded: loaded, layout: layout, formats: settings.formats, logger: logger,
                                                  markedResults: settings.markedResults) else {
                    settling[name] = nil
                    if drafts[name] != loaded.identity {
                        drafts[name] = loaded.identity
                        logger.info("left in outgoing as a draft; saving it without the draft mark sends it", id: id, ["file": LogValue(name)])
                    }
                    return
                }
                drafts[name] = nil
                if case .invalid(_, _, let problem) = intake, Watcher.unsettledKinds.contains(problem.kind) {
                    let modified = Double(loaded.identity.modifiedNanoseconds) / 1e9
                    let quietUntil = modified + settings.settleSeconds
                    if quietUntil > Watcher.now() {
                        settling[name] = quietUntil
                        logger.debug("not valid yet; waiting for the writer to finish", id: id, ["problem": LogValue(problem.description)])
                        return
                    }
                }
                settling[name] = nil
                lastRead[name] = snapshot
                if case .valid = intake { logger.debug("validated", id: id, ["bytes": "\(loaded.bytes.count)"]) }
                if abandoned, case .valid(var task) = intake {
                    task.takenOver = true
                    delegate.found(.valid(task))
                } else {
                    delegate.found(intake)
                }
            }
        }
    }

    /// What `lstat` says of `path` for `IntakeRereadRule`; nil when it says nothing (the
    /// read that follows reports why).
    static func snapshot(_ path: String) -> IntakeRereadRule.Snapshot? {
        (try? Syscall.lstat(path)).map(snapshot)
    }

    static func snapshot(_ info: stat) -> IntakeRereadRule.Snapshot {
        IntakeRereadRule.Snapshot(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedNanoseconds: Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec),
            changedNanoseconds: Int64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctim.tv_nsec))
    }

    /// What a readable request amounts to: a task (new, or resumed from its record), a
    /// task that already ended before a restart, or an invalid request; nil for a draft,
    /// which is left alone.
    static func intake(id: String, path: String, loaded: RequestFile.Loaded, layout: SpoolLayout, formats: FormatContext, logger: Logger,
                       markedResults: Bool = false) -> Intake? {
        guard let format = RequestName.format(of: String(path.split(separator: "/").last ?? ""))?.format else {
            return .invalid(id: id, requestPath: path, problem: RequestProblem(.unusableName, "no request format takes this name"))
        }
        let verdict = format.prepare(loaded.bytes, context: formats)
        if case .draft = verdict { return nil }
        let record = TaskRecord.load(layout, id: id)
        var history = TaskHistory(firstSeen: Date())
        // In the one-fsync order a power loss can leave a marked result without its record:
        // the result is looked at whenever the record does not already prove the end.
        let recordProves = record.map { $0.status == .done || $0.status == .failed } ?? false
        if record != nil || markedResults {
            let result: FileIdentity?
            do {
                result = FileIdentity(try Syscall.lstat(layout.result(id)))
            } catch let error as SystemError where error.errno == ENOENT {
                result = nil
            } catch {
                // Decided as if there were no result, as before; the operator hears why.
                logger.warning("cannot look at the result for the restart decision", id: id, ["reason": "\(error)"])
                result = nil
            }
            let mark = result != nil && markedResults && !(recordProves && record?.resultInode == result?.inode)
                ? ResultMarkReader.read(layout.result(id), id: id, logger: logger) : nil
            switch Recovery.decide(record: record, identity: loaded.identity, resultInode: result?.inode,
                                   resultModifiedNanoseconds: result?.modifiedNanoseconds, resultMark: mark) {
            case .alreadyEnded:
                return .alreadyEnded(id: id, requestPath: path)
            case .resume(let saved):
                history = saved
            case .fresh:
                break
            }
        }
        switch verdict {
        case .request(let summary, _):
            var task = TaskDescriptor(id: id, requestPath: path, summary: summary, identity: loaded.identity, history: history)
            task.recordless = record == nil
            return .valid(task)
        case .invalid(let problem):
            return .invalid(id: id, requestPath: path, problem: problem)
        case .draft:
            return nil
        }
    }
}
