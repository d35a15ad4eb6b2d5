import Glibc
import Synchronization

/// Whether the spool's disk took the last write. After a local write failed, no request is
/// sent until a probe write succeeds: the endpoint's answer could not be kept, so another
/// call would only cost another call (a deleted `failed/` made a 400 repeat 16 times).
public final class DiskHealth: Sendable {
    private let troubled = Atomic<Bool>(false)
    /// Device and inode of the spool's root when the daemon started: a root replaced by a
    /// symbolic link (or another folder) while running would be followed by name.
    private let root: Mutex<(device: UInt64, inode: UInt64)?>
    private let pinsRoot: Bool
    private let rootReported = Atomic<Bool>(false)

    /// With a layout, the root is pinned now if it exists, else at the first start.
    public init(layout: SpoolLayout? = nil) {
        pinsRoot = layout != nil
        root = Mutex(layout.flatMap(DiskHealth.identity))
    }

    static func identity(_ layout: SpoolLayout) -> (device: UInt64, inode: UInt64)? {
        // No folder to look at yet: no identity, and the spool's own checks name the problem.
        guard let info = try? Syscall.lstat(layout.root), info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// A write of an outcome failed.
    public func writeFailed() {
        troubled.store(true, ordering: .relaxed)
    }

    /// Before a start: recreates missing folders, and after a failed write probes until a
    /// write succeeds. The reason to hold the start, or nil to go ahead.
    public func holdReason(_ layout: SpoolLayout, logger: Logger) -> String? {
        if pinsRoot {
            let now = DiskHealth.identity(layout)
            let pinned = root.withLock { pinned in
                if pinned == nil { pinned = now }
                return pinned
            }
            guard let now, let pinned, now == pinned else {
                if !rootReported.exchange(true, ordering: .relaxed) {
                    logger.error("the spool's root was replaced while running (by a link or another folder); nothing is sent until it is back",
                                 ["path": LogValue(layout.root)])
                }
                return "the spool's root \(layout.root) is not the folder the daemon started with"
            }
            if rootReported.exchange(false, ordering: .relaxed) { logger.info("the spool's root is back", ["path": LogValue(layout.root)]) }
        }
        if !layout.recreateMissingFolders(logger: logger).isEmpty { troubled.store(true, ordering: .relaxed) }
        guard troubled.load(ordering: .relaxed) else { return nil }
        if let error = layout.probeWritable() { return "the spool cannot be written (\(error)); nothing is sent until it can" }
        troubled.store(false, ordering: .relaxed)
        logger.info("the spool can be written again")
        return nil
    }
}
