import Glibc

/// The spool's files as publication plans touch them: every call through `Syscall`, every
/// file the daemon creates with the spool's mode (set explicitly, never through the umask).
public struct SpoolFiles: PublicationFiles, Sendable {
    // Untyped: typed throws through the syscall wrapper crash the 6.3.1 compiler
    // (MandatoryAllocBoxToStack); every error here is a SystemError all the same.
    public typealias Failure = any Error

    public let layout: SpoolLayout
    /// Descriptors the caller holds open on files a plan syncs, by path; not owned here.
    public let heldOpen: [String: Int32]
    /// A spool other machines write to through mounts of their own: a producer's file is
    /// read afresh before it is moved or removed (`unlinkIfSame`, `renameIfSame`).
    public let shared: Bool

    /// The largest producer's file read afresh on a shared spool; a larger one (a batch
    /// file) is compared by its attributes alone.
    public static let freshReadLimit = 64 << 20

    /// The caller looked at `SpoolLayout.integrityProblem` just before: `mayPublish` does
    /// not look again (six syscalls a request saved on the finisher's path).
    public let integrityChecked: Bool

    public init(layout: SpoolLayout, heldOpen: [String: Int32] = [:], shared: Bool = false, integrityChecked: Bool = false) {
        self.layout = layout
        self.heldOpen = heldOpen
        self.shared = shared
        self.integrityChecked = integrityChecked
    }

    /// Through the descriptor that wrote the file when one is held: no second open (a
    /// network round trip on a shared spool), and the fsync reaches the file written even
    /// if its name was taken meanwhile. A transfer past its descriptor budget holds none
    /// (it opens its `.partial` for each write), so the file is opened by name.
    public func syncFile(_ path: String) throws {
        if let held = heldOpen[path] {
            try Syscall.fsync(held, path: path)
            return
        }
        try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW).fsync()
    }

    public func mayPublish() throws {
        if !integrityChecked, let problem = layout.integrityProblem() { throw SpoolElsewhereError(description: problem) }
    }

    public func inode(of path: String) throws -> UInt64 {
        UInt64(try Syscall.lstat(path).st_ino)
    }

    public func write(_ bytes: [UInt8], to path: String, durable: Bool) throws {
        if durable {
            try DurableFile.write(bytes, to: path, mode: layout.fileMode, syncDirectory: false)
        } else {
            try DurableFile.replace(bytes, at: path, mode: layout.fileMode)
        }
    }

    /// Streams the output line by line and writes the failed lines a MiB at a time: a
    /// batch's output may be gigabytes.
    public func writeFailedLines(of output: String, to path: String) throws {
        // Published, then taken by its consumer (the summary was out before a crash cut the
        // end short, or a consumer did not wait for it): the end goes on, and an errors file
        // there is left as it is, the consumer's by now. (Taken between this look and the
        // open, the step fails, and its next run finds it gone.)
        guard try Syscall.exists(output) else { return }
        try DurableFile.write(to: path, mode: layout.fileMode, syncDirectory: false) { emit in
            var failed: [UInt8] = []
            try FileReader.forEachLine(path: output) { line in
                guard !line.isEmpty, line.withUnsafeBytes(BatchOutputLine.isFailed) else { return }
                failed += line
                failed.append(0x0A)
                if failed.count >= 1 << 20 {
                    try emit(failed)
                    failed.removeAll(keepingCapacity: true)
                }
            }
            try emit(failed)
        }
    }

    /// Writes a failure's error record from its task record (durable) unless one is there;
    /// false when the task record holds none. For a failure committed while its record
    /// could not be written (`TaskRecord.errorRecordOwed`).
    public func writeErrorRecord(from record: TaskRecord) throws -> Bool {
        guard let bytes = record.errorRecord else { return false }
        if try !Syscall.exists(layout.errorRecord(record.id)) { try write(bytes, to: layout.errorRecord(record.id), durable: true) }
        return true
    }

    public func writeRecord(_ record: TaskRecord, durable: Bool) throws {
        try write(record.encoded(), to: layout.taskRecord(record.id), durable: durable)
    }

    /// The `rename` step moves only the daemon's own files (an answer, a batch's output). A
    /// folder someone put at `from` after the last look (the file renamed away, a folder made
    /// in its place, within microseconds) has been moved to `to` instead: published, it would
    /// stand as the outcome, a batch's summary saying `completed` over an output with no
    /// line. It is moved back and the step fails, tried again as any failed publication.
    public func rename(_ from: String, _ to: String) throws {
        try Syscall.rename(from, to)
        // Nothing there: taken by its consumer already.
        guard Syscall.isFolder(to) else { return }
        // Plain rename back: a file or a non-empty folder put at `from` meanwhile makes it fail
        // (ENOTDIR, ENOTEMPTY) rather than be replaced.
        try Syscall.rename(to, from)
        throw HeldFile.FolderInTheWay(path: from)
    }

    /// `ENOENT` names either side of a rename: the source is taken as gone only while the
    /// destination's folder is there (a deleted `failed/` is an error, tried again).
    public func renameIfPresent(_ from: String, _ to: String) throws -> Bool {
        do {
            try Syscall.rename(from, to)
            return true
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ESTALE {
            guard try Syscall.exists(PublicationPlan.folder(of: to)) else { throw error }
            return false
        }
    }

    public func identity(of path: String) throws -> FileIdentity? {
        let info: stat
        do {
            info = try Syscall.lstat(path)
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ESTALE {
            return nil
        }
        return FileIdentity(info).with(bornNanoseconds: FileIdentity.birthTime(path: path))
    }

    /// On a shared spool, `unlinkIfSame` with the file opened and read now, past the page
    /// cache, and removed while still open (`freshly`).
    public func unlinkIfSame(_ path: String, _ expected: FileIdentity?) throws -> ProducerFileCheck {
        try freshly(path, expected) { try unlinkIfPresent(path) }
    }

    /// On a shared spool, `renameIfSame` as `unlinkIfSame`.
    public func renameIfSame(_ from: String, _ to: String, _ expected: FileIdentity?) throws -> ProducerFileCheck {
        try freshly(from, expected) { try renameIfPresent(from, to) }
    }

    /// Whether the producer's file at `path` is still the one read at intake, and if so
    /// `act` on it (true when the name was still there). On a local spool, by its
    /// attributes. On a shared one, by its content read afresh: GlusterFS's and sshfs's
    /// caches show a replaced file's old attributes (GlusterFS its old pages too) for about
    /// a second, and sshfs keeps one inode number per path. `act` runs while the file is
    /// open: on sshfs a file closed just before its unlink can be left as `.fuse_hidden*`
    /// (`FileDescriptor.unlinkThenClose`).
    private func freshly(_ path: String, _ expected: FileIdentity?, _ act: () throws -> Bool) throws -> ProducerFileCheck {
        guard shared, let expected, expected.contentHash != nil else { return try ifSameIdentity(path, expected, act) }
        let seen: stat
        do {
            seen = try Syscall.lstat(path)
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ESTALE {
            return .alreadyGone
        }
        // Not a regular file (a link, a FIFO put in its place): another file, not to be read.
        // Too large to read (a batch file): by its attributes.
        guard seen.st_mode & S_IFMT == S_IFREG else { return .replacedByNewer }
        guard seen.st_size <= Self.freshReadLimit else { return try ifSameIdentity(path, expected, act) }
        // ESTALE: the handle of the file a stale cache showed; opened again, the name leads
        // to the file there now. A second one is an error, left for a later look.
        var stale = false
        while true {
            do {
                let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
                let info = try file.fstat()
                guard info.st_mode & S_IFMT == S_IFREG else { return .replacedByNewer }
                Syscall.dropCachedPages(file.rawValue)
                var bytes: [UInt8] = []
                try FileReader.forEachChunk(fd: file.rawValue, path: path) { chunk in
                    guard bytes.count + chunk.count <= Self.freshReadLimit else { throw SystemError(errno: EFBIG, call: "read", path: path) }
                    bytes.append(contentsOf: chunk)
                }
                let now = FileIdentity(info).with(bornNanoseconds: FileIdentity.birthTime(fd: file.rawValue)).with(contentHash: Fingerprint.hash(bytes))
                guard now.isSameInstance(as: expected) else { return .replacedByNewer }
                return try act() ? .done : .alreadyGone
            } catch let error as SystemError where error.errno == ESTALE && !stale {
                stale = true
            } catch let error as SystemError where error.errno == ENOENT {
                return .alreadyGone
            } catch let error as SystemError where [EACCES, EPERM, ELOOP, EFBIG, ENXIO].contains(error.errno) {
                // The file read at intake could be read: one that cannot is another.
                return .replacedByNewer
            }
        }
    }

    @discardableResult
    public func unlinkIfPresent(_ path: String) throws -> Bool {
        do {
            return try Syscall.unlinkIfPresent(path)
        } catch let error as SystemError where error.errno == EISDIR {
            // A folder someone made at the name: the file this step removes is not there, and
            // a folder is never the daemon's to remove. Failing would hold the end up for good
            // over a file already gone (a batch's journal moved away and a folder put there).
            return false
        }
    }

    public func exists(_ path: String) throws -> Bool {
        try identity(of: path) != nil
    }

    public func syncFolder(_ path: String) throws {
        try Syscall.fsyncDirectory(path)
    }

    /// Through the held descriptor when there is one, as `syncFile`.
    public func mark(_ path: String, _ mark: ResultMark) throws {
        if let held = heldOpen[path] {
            try Syscall.fsetxattr(held, ResultMark.attribute, mark.encoded(), path: path)
            return
        }
        try Syscall.setxattr(path, ResultMark.attribute, mark.encoded())
    }

    public func ensureFolder(_ path: String) throws {
        do {
            try Syscall.mkdir(path, mode: layout.directoryMode)
        } catch let error as SystemError where error.errno == EEXIST {
            // There already: files are moved into it (`failed/superseded`), so it must be a
            // folder of the spool's, not a link that would take them outside.
            guard try Syscall.lstat(path).st_mode & S_IFMT == S_IFDIR else {
                throw SpoolElsewhereError(description: "\(path) is not a folder (a symbolic link is not followed inside the spool)")
            }
        }
    }
}
