import Foundation
import Glibc
import Synchronization

/// Reads the commands' requests in `state/control` (see `ControlRequest`) on a thread of its
/// own, twice a second, and hands them to the scheduler. Each file acts once per daemon:
/// a daemon alone on its spool removes it at once; daemons sharing a spool each act on it
/// and let it age out, since none knows whether the others have seen it.
final class ControlReader: Sendable {
    private let layout: SpoolLayout
    private let shared: Bool
    private let post: @Sendable (Scheduler.Event) -> Void
    private let logger: Logger
    private let stopRequested = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)

    init(layout: SpoolLayout, shared: Bool, logger: Logger, post: @escaping @Sendable (Scheduler.Event) -> Void) {
        self.layout = layout
        self.shared = shared
        self.logger = logger
        self.post = post
    }

    func start() {
        NamedThread.start("control") { [self] in
            // Files already acted on, by name and modification time: a file rewritten under
            // the same name (a second `retry`) acts again.
            var seen: [String: Int] = [:]
            while !stopRequested.load(ordering: .relaxed) {
                seen = readOnce(seen: seen)
                usleep(500_000)
            }
            stopped.signal()
        }
    }

    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        stopped.wait()
    }

    /// One look at the folder; returns what has been acted on and still exists.
    func readOnce(seen: [String: Int]) -> [String: Int] {
        let names: [String]
        do {
            names = try Syscall.listDirectory(layout.control)
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ENOTDIR {
            // No requests yet: the commands make the folder when they have one (a spool made
            // before it existed, or its state folder deleted, has none).
            return [:]
        } catch {
            logger.warning("cannot read the control folder", ["path": LogValue(layout.control), "reason": "\(error)"])
            return seen
        }
        var kept: [String: Int] = [:]
        let now = Date().timeIntervalSince1970
        for name in names {
            let path = layout.control + "/" + name
            let info: stat
            do {
                info = try Syscall.lstat(path)
            } catch let error as SystemError where error.errno == ENOENT {
                continue
            } catch {
                logger.warning("cannot look at a control file", ["path": LogValue(path), "reason": "\(error)"])
                continue
            }
            let written = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            let stamp = info.st_mtim.tv_sec &* 1_000_000_000 &+ info.st_mtim.tv_nsec
            if ControlRequest.isExpired(written: written, now: now) {
                logger.bestEffort("removing an expired control file") { try Syscall.unlinkIfPresent(path) }
                continue
            }
            guard let request = ControlRequest.parse(name), info.st_mode & S_IFMT == S_IFREG else { continue }
            if seen[name] == stamp {
                kept[name] = stamp
                continue
            }
            switch request {
            case .sendNow(let id):
                logger.info("asked to send a waiting request now", ["id": LogValue(id)])
                post(.sendNow(id: id))
            case .sendNowAll:
                logger.info("asked to send every waiting request now")
                post(.sendNow(id: nil))
            }
            if shared {
                kept[name] = stamp
            } else {
                logger.bestEffort("removing a control file acted on") { try Syscall.unlinkIfPresent(path) }
            }
        }
        return kept
    }
}
