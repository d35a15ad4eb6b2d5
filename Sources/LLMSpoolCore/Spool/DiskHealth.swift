import Glibc
import Synchronization

/// Whether the spool's disk took the last write. After a local write failed, no request is
/// sent until a probe write succeeds: the endpoint's answer could not be kept, so another
/// call would only cost another call (a deleted `failed/` made a 400 repeat 16 times).
public final class DiskHealth: Sendable {
    private let troubled = Atomic<Bool>(false)
    private let integrityReported = Atomic<Bool>(false)
    private let lastProbeFailed = Atomic<Bool>(false)

    public init() {}

    /// A write of an outcome failed.
    public func writeFailed() {
        troubled.store(true, ordering: .relaxed)
    }

    /// Whether the last probe write failed (none has succeeded since): the spool cannot be
    /// written. A write owed a probe alone (a failure, or a hold while the folders were
    /// elsewhere) is not this: the disk may be fine, and no probe may come soon.
    public var probeFailed: Bool {
        lastProbeFailed.load(ordering: .relaxed)
    }

    /// Before a start: recreates missing folders, and after a failed write probes until a
    /// write succeeds. The reason to hold the start, or nil to go ahead.
    public func holdReason(_ layout: SpoolLayout, logger: Logger) -> String? {
        let inspection = layout.inspectFolders()
        if let problem = inspection.problem {
            if !integrityReported.exchange(true, ordering: .relaxed) {
                logger.error("the spool's folders are not the ones the daemon started with; nothing is written or sent until they are", ["reason": LogValue(problem)])
            }
            return problem
        }
        if integrityReported.exchange(false, ordering: .relaxed) { logger.info("the spool's folders are as the daemon started with them again", ["path": LogValue(layout.root)]) }
        let missing = layout.publicationFolders.filter(inspection.missing.contains)
        if !missing.isEmpty && !layout.recreate(missing, logger: logger).isEmpty { troubled.store(true, ordering: .relaxed) }
        guard troubled.load(ordering: .relaxed) else { return nil }
        if let error = layout.probeWritable() {
            lastProbeFailed.store(true, ordering: .relaxed)
            return "the spool cannot be written (\(error)); nothing is sent until it can"
        }
        lastProbeFailed.store(false, ordering: .relaxed)
        troubled.store(false, ordering: .relaxed)
        logger.info("the spool can be written again")
        return nil
    }
}
