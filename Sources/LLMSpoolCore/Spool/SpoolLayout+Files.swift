import Glibc

/// The spool's folders and side files on disk.
extension SpoolLayout {
    /// The escaped original name of a request renamed to a safe id, if it was.
    public func loadOriginalName(_ id: String) -> String? {
        // No side file: the request was never renamed.
        guard let bytes = try? FileReader.prefix(path: originalName(id), limit: 4096), !bytes.isEmpty else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The folders every outcome writes to.
    var publicationFolders: [String] { [state, incoming, failed] }

    /// Recreates the folders an outcome writes to that someone deleted while the daemon
    /// ran (`outgoing` has its own watch), each logged, and with `state` the folders in it
    /// (leases, the lane's and batches' records, hooks owed): without `state/leases` no
    /// request could be claimed again. Returns the folders recreated.
    @discardableResult
    public func recreateMissingFolders(logger: Logger) -> [String] {
        let missing = publicationFolders.filter { !Syscall.isPresent($0) }
        // Looked at only when something is missing: a root that is gone (an unmounted
        // disk) is not made again on the filesystem under it; the start's check says why.
        guard !missing.isEmpty, integrityProblem() == nil else { return [] }
        return recreate(missing, logger: logger)
    }

    /// Makes `missing` (publication folders found missing by a look that also found the
    /// spool's names sound) again, each logged. Returns the folders recreated.
    public func recreate(_ missing: [String], logger: Logger) -> [String] {
        var recreated: [String] = []
        let inState = missing.contains(state) ? folders.filter { $0.hasPrefix(state + "/") } : []
        for directory in missing + inState {
            do {
                try Syscall.mkdir(directory, mode: directoryMode)
                recreated.append(directory)
                logger.warning("a spool folder was missing; recreated", ["path": LogValue(directory)])
            } catch let error as SystemError where error.errno == EEXIST {
            } catch {
                logger.error("a spool folder is missing and cannot be recreated", ["path": LogValue(directory), "reason": "\(error)"])
            }
        }
        return recreated
    }

    /// Whether an outcome could be written now: a hidden file created and removed in each
    /// folder an outcome writes to. The error of the first folder that refuses, if any.
    public func probeWritable() -> SystemError? {
        for directory in publicationFolders {
            let probe = directory + "/.llmspool-probe"
            do {
                // Removed while open: closed first, sshfs can keep it as `.fuse_hidden*`
                // (`FileDescriptor.unlinkThenClose`).
                // A block written, not an empty file: a full disk still creates empty files
                // (an inode is free), and a probe that passed there let each start fail again
                // at its first write, about 20 log lines a second.
                let file = try FileDescriptor.open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: fileMode)
                var refused: (any Error)?
                do {
                    try file.writeAll([UInt8](repeating: 0, count: 4096))
                } catch {
                    refused = error
                }
                try file.unlinkThenClose(probe)
                if let refused { throw refused }
            } catch let error as SystemError {
                return error
            } catch {
                return SystemError(errno: EIO, call: "probe", path: probe)
            }
        }
        return nil
    }

    /// `create()` while the daemon runs: nothing is made when the spool's names lead
    /// elsewhere (`integrityProblem`), which is returned instead.
    public func createUnlessElsewhere() throws -> String? {
        if let problem = integrityProblem() { return problem }
        try create()
        return nil
    }

    /// Creates the spool's folders that are missing, with `directoryMode`.
    public func create() throws {
        for directory in folders {
            do { try Syscall.mkdir(directory, mode: directoryMode) } catch let error as SystemError where error.errno == EEXIST {}
        }
    }
}
