import CInotifyTools
import Foundation
import Glibc
import Synchronization

/// Finds requests in `outgoing`: inotify for speed, a directory scan as the truth. The
/// watch is added before the first scan, so nothing dropped while the daemon was starting
/// is missed; overflow and loss of the folder trigger a rescan, and so does a timer.
///
/// libinotifytools keeps process-global state and is not thread-safe, so every call into
/// it happens on this object's own thread.
public final class Watcher: @unchecked Sendable {
    // @unchecked Sendable holds because `lastScan` and the library's state are touched only
    // on the watcher thread; `stopRequested` is atomic and the rest is immutable.

    /// What the watcher tells the daemon.
    public struct Delegate: Sendable {
        public var found: @Sendable (Intake) -> Void
        public var removed: @Sendable (_ id: String) -> Void

        public init(found: @escaping @Sendable (Intake) -> Void, removed: @escaping @Sendable (String) -> Void) {
            self.found = found
            self.removed = removed
        }
    }

    private static let watchedEvents = Int32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    private let layout: SpoolLayout
    private let maxRequestBytes: Int
    private let rescanInterval: TimeInterval
    private let delegate: Delegate
    private let logger: Logger
    private let stopRequested = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    private let ready = DispatchSemaphore(value: 0)
    private let startError = Mutex<String?>(nil)
    private var lastScan = Date.distantPast
    private var reportedUnusable = Set<String>()

    public init(layout: SpoolLayout, maxRequestBytes: Int, rescanInterval: TimeInterval, delegate: Delegate, logger: Logger) {
        self.layout = layout
        self.maxRequestBytes = maxRequestBytes
        self.rescanInterval = rescanInterval
        self.delegate = delegate
        self.logger = logger
    }

    /// Starts the thread; returns once the watch is in place (or throws why it is not).
    public func start() throws {
        let thread = Thread { [self] in run() }
        thread.name = "llmspool.watcher"
        thread.start()
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

    private func run() {
        defer {
            inotifytools_cleanup()
            stopped.signal()
        }
        // The library waits with select(), so its descriptor must stay below FD_SETSIZE:
        // it is initialised before the transfer engine opens any sockets.
        guard inotifytools_initialize() != 0 else {
            startError.withLock { $0 = "cannot start inotify: \(String(cString: strerror(inotifytools_error())))" }
            ready.signal()
            return
        }
        guard addWatch() else {
            startError.withLock { $0 = "cannot watch \(layout.outgoing): \(String(cString: strerror(inotifytools_error())))" }
            ready.signal()
            return
        }
        ready.signal()
        scan(reason: "start")
        while !stopRequested.load(ordering: .relaxed) {
            // Whole seconds only; 1 s bounds how long stop() waits.
            if let event = inotifytools_next_events(1, 1) {
                handle(event)
            }
            if Date().timeIntervalSince(lastScan) >= rescanInterval {
                scan(reason: "periodic")
            }
        }
    }

    private func addWatch() -> Bool {
        inotifytools_watch_file(layout.outgoing, Watcher.watchedEvents) != 0
    }

    private func handle(_ event: UnsafeMutablePointer<inotify_event>) {
        let mask = event.pointee.mask
        if event.pointee.wd == -1 || mask & UInt32(IN_Q_OVERFLOW) != 0 {
            logger.warning("inotify queue overflowed; rescanning outgoing")
            scan(reason: "overflow")
            return
        }
        if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
            rewatch()
            return
        }
        let name = String(cString: llms_inotify_event_name(event))
        if mask & UInt32(IN_ISDIR) != 0 { return }
        if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 {
            consider(name)
        } else if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0, case .request(let id) = RequestName.classify(name) {
            delegate.removed(id)
        }
    }

    /// The watched folder was deleted or moved: wait for it to exist again, watch it, rescan.
    private func rewatch() {
        logger.warning("outgoing was removed or moved; watching for it again", ["path": layout.outgoing])
        for watch in [layout.outgoing] { _ = inotifytools_remove_watch_by_filename(watch) }
        while !stopRequested.load(ordering: .relaxed) {
            try? layout.create()
            if addWatch() {
                scan(reason: "folder recreated")
                return
            }
            usleep(200_000)
        }
    }

    private func scan(reason: String) {
        lastScan = Date()
        let names: [String]
        do {
            names = try Syscall.listDirectory(layout.outgoing)
        } catch {
            logger.error("cannot scan outgoing", ["reason": "\(error)"])
            return
        }
        logger.debug("scanning outgoing", ["reason": reason, "entries": "\(names.count)"])
        for name in names where !stopRequested.load(ordering: .relaxed) {
            consider(name)
        }
    }

    /// Reads and validates one candidate; the scheduler decides whether it is new.
    private func consider(_ name: String) {
        switch RequestName.classify(name) {
        case .ignored:
            return
        case .unusable(let reason):
            if reportedUnusable.insert(name).inserted {
                logger.warning("left in outgoing: \(reason)", ["file": name])
            }
        case .request(let id):
            let path = layout.request(id)
            switch RequestFile.read(path: path, limit: maxRequestBytes) {
            case nil:
                return  // gone already
            case .failure(let problem)?:
                delegate.found(.invalid(id: id, requestPath: path, problem: problem))
            case .success(let loaded)?:
                delegate.found(Watcher.intake(id: id, path: path, loaded: loaded, layout: layout))
            }
        }
    }

    /// What a readable request amounts to: a task (new, or resumed from its record), a
    /// task that already ended before a restart, or an invalid request.
    static func intake(id: String, path: String, loaded: RequestFile.Loaded, layout: SpoolLayout) -> Intake {
        let record = TaskRecord.load(layout, id: id)
        var history = TaskHistory(firstSeen: Date())
        if let record {
            let resultInode = (try? Syscall.lstat(layout.result(id))).map { UInt64($0.st_ino) }
            switch Recovery.decide(record: record, identity: loaded.identity, resultInode: resultInode) {
            case .alreadyEnded:
                return .alreadyEnded(id: id, requestPath: path)
            case .resume(let saved):
                history = saved
            case .fresh:
                break
            }
        }
        switch RequestValidator.validate(loaded.bytes) {
        case .success(let summary):
            return .valid(TaskDescriptor(id: id, requestPath: path, summary: summary, identity: loaded.identity, history: history))
        case .failure(let problem):
            return .invalid(id: id, requestPath: path, problem: problem)
        }
    }
}
