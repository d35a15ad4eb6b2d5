import Glibc

/// A file in `incoming` the daemon writes through a descriptor it holds open, whose name
/// someone took away while it was written (`rm -rf incoming`, the folder made again or
/// not). Its bytes are still in the open file: an answer already received, or a batch's
/// committed lines. Dropped, the answer would only come back from the provider by sending
/// the request again, and paying for it again.
enum HeldFile {
    /// What `path` names now, beside the file open as `fd`.
    enum Name: Equatable {
        /// The file open as `fd`.
        case held
        /// No file: removed, or its folder gone.
        case missing
        /// Another file: on a shared spool, another daemon's (a batch's output it took over).
        case another
        /// A folder someone made: never another daemon's file, and no file can have the name
        /// while it is there.
        case folder
    }

    static func name(_ fd: Int32, path: String) throws -> Name {
        let held = try Syscall.fstat(fd, path: path)
        let named: stat
        do {
            named = try Syscall.lstat(path)
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ENOTDIR {
            return .missing
        }
        if named.st_mode & S_IFMT == S_IFDIR { return .folder }
        return named.st_dev == held.st_dev && named.st_ino == held.st_ino ? .held : .another
    }

    /// A folder someone made under the name of a file the daemon holds open.
    struct FolderInTheWay: Error, CustomStringConvertible {
        var path: String
        var description: String {
            "\(path) is a folder, and no file can be given its name while it is there"
        }
    }

    private static func isFolder(_ path: String) throws -> Bool {
        do {
            return try Syscall.lstat(path).st_mode & S_IFMT == S_IFDIR
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ENOTDIR {
            return false
        }
    }

    /// Whether `path` no longer names the file open as `fd`: no file there, or another.
    static func lostName(_ fd: Int32, path: String) throws -> Bool {
        try name(fd, path: path) != .held
    }

    /// A new file at `path` with every byte of the file open as `fd`, fsynced, its folder
    /// made again first if it is gone (logged as any folder recreated). Opened with `flags`
    /// (`O_RDWR` at least: the copy may have to be given a name again itself), positioned
    /// at its end. `fd` must be readable; its position is not moved. Written beside the name
    /// first, so that a copy cut short (a full disk) never stands under it. A file found at
    /// `path` meanwhile is replaced only when `replacing` (a local spool, where only a
    /// person or a tool can have put it there); on a shared spool it is another daemon's that
    /// took the work over, or one seen missing through a stale cache, and the copy is given
    /// the name only with `link`, which fails (EEXIST) rather than replace it.
    ///
    /// `stillMine` is asked just before the name is given, `provenLost` after: a daemon
    /// paused past its lease between its own look at the claim and this call finds the name
    /// missing because the taker published the work and removed it; given back, the name
    /// would stand for work already ended (a batch's journal, ended again as an orphan). Not
    /// proven its own before, the copy is not named; proven lost after (a lease that cannot
    /// be read now proves nothing: the name is the work's only one), the name is taken back
    /// while it still leads to the copy (`ClaimLostDuringTakeover` either way).
    static func giveNameAgain(from fd: Int32, to path: String, flags: Int32, replacing: Bool, layout: SpoolLayout,
                              logger: Logger, stillMine: () -> Bool = { true }, provenLost: () -> Bool = { false }) throws -> FileDescriptor {
        let named = try giveNameAgainOnce(from: fd, to: path, flags: flags, replacing: replacing, layout: layout, logger: logger,
                                          stillMine: stillMine)
        if provenLost() {
            takeBack(path, leadingTo: named, logger: logger)
            throw ClaimLostDuringTakeover(path: path)
        }
        return named
    }

    /// Removes the name `path` while it leads to the file open as `file`: the claim under
    /// which it was given was lost.
    private static func takeBack(_ path: String, leadingTo file: borrowing FileDescriptor, logger: Logger?) {
        do {
            if try name(file.rawValue, path: path) == .held { try Syscall.unlink(path) }
        } catch {
            logger?.warning("a claim was lost just as a file was given its name, and the name cannot be taken back",
                           ["path": LogValue(path), "reason": "\(error)"])
        }
    }

    private static func giveNameAgainOnce(from fd: Int32, to path: String, flags: Int32, replacing: Bool, layout: SpoolLayout,
                                          logger: Logger, stillMine: () -> Bool) throws -> FileDescriptor {
        // The name may be lost because the spool's names lead elsewhere now: a copy there
        // would put the output outside the spool, and the next appends with it.
        if let problem = layout.integrityProblem() { throw SpoolElsewhereError(description: problem) }
        layout.recreateMissingFolders(logger: logger)
        // No rename replaces a folder and no link is made over one: the copy (for a batch,
        // its whole output) is not written only to be thrown away, try after try.
        if try isFolder(path) { throw FolderInTheWay(path: path) }
        let temporary = uniqueTemporary(beside: path)
        let copy = try FileDescriptor.open(temporary, flags | O_CREAT | O_EXCL | O_NOFOLLOW, mode: layout.fileMode)
        do {
            try copy.copy(from: fd, count: nil, path: path)
            try copy.fsync()
            guard stillMine() else { throw ClaimLostDuringTakeover(path: path) }
            if replacing {
                try Syscall.rename(temporary, path)
                return copy
            }
            do {
                try Syscall.link(temporary, path)
            } catch let error as SystemError where error.errno != EEXIST {
                // No second names on this filesystem (EPERM, ENOSYS, EOPNOTSUPP): an
                // exclusive create under the name, the copy's bytes written again.
                removeTemporary(temporary)
                return try copyUnderTheName(from: fd, to: path, flags: flags, layout: layout)
            }
        } catch {
            removeTemporary(temporary)
            throw error
        }
        // Opened again by the name: sshfs shows a file's two names as two files (its inode
        // numbers are per path), so the descriptor on the temporary's name would never be
        // `.held` under the name. The temporary's name goes while its descriptor is open
        // (`unlinkThenClose`: no `.fuse_hidden*` left on sshfs).
        let named = try openAtEnd(path, flags: flags, removingOnFailure: temporary)
        do {
            try copy.unlinkThenClose(temporary)
        } catch {
            // The copy is under the name; a temporary name that stays is swept once stale.
        }
        return named
    }

    /// The file at `path` opened with `flags` (without those that create), positioned at its
    /// end; `temporary` removed when that fails.
    private static func openAtEnd(_ path: String, flags: Int32, removingOnFailure temporary: String) throws -> FileDescriptor {
        do {
            let named = try FileDescriptor.open(path, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NOFOLLOW)
            try Syscall.seekToEnd(named.rawValue, path: path)
            return named
        } catch {
            removeTemporary(temporary)
            throw error
        }
    }

    /// `giveNameAgain` where hard links are not supported.
    private static func copyUnderTheName(from fd: Int32, to path: String, flags: Int32, layout: SpoolLayout) throws -> FileDescriptor {
        let copy = try FileDescriptor.open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW, mode: layout.fileMode)
        try copy.copy(from: fd, count: nil, path: path)
        try copy.fsync()
        return copy
    }

    private static func uniqueTemporary(beside path: String) -> String {
        SpoolLayout.heldCopyTemporary(in: DurableFile.directory(of: path), unique: "\(getpid()).\(UInt64.random(in: 0...UInt64.max))")
    }

    /// After a failed copy: that failure is what the caller must hear; a temporary that
    /// cannot be removed now is taken by the sweeps once stale (`SpoolLayout.isHeldCopyLeftover`).
    private static func removeTemporary(_ temporary: String) {
        do {
            try Syscall.unlinkIfPresent(temporary)
        } catch {
            // As above: reported by the copy's own failure.
        }
    }

    /// Makes the file at `path`, which another daemon may still write through a descriptor
    /// it holds (a batch's output or journal whose claim was taken from a daemon paused past
    /// its lease), this daemon's own: a copy of its first `length` bytes, fsynced, renamed
    /// over the name. Whatever the other daemon writes after goes to a file no name leads
    /// to, and the copy, opened with `flags` and positioned at its end, is returned. Fails
    /// when the file is shorter than `length`, when `stillMine`, asked just before the
    /// rename (a long copy may outlast the claim), says no, and when the name no longer leads
    /// to the file copied (`NameChangedDuringTakeover`). Once renamed, `provenLost` is asked:
    /// a claim proven lost meanwhile has the name taken back. Nothing is written unless the
    /// filesystem has room for the copy and `reserve` bytes more (`NoRoomToTakeOver`): a
    /// copy cut short by a full disk would fill it to the last byte at every try. `interrupt`
    /// is asked before each chunk and may stop a long copy by throwing (a daemon stopping).
    /// The folder is not fsynced here.
    static func takeOver(_ path: String, length: Int, reserve: UInt64 = 0, flags: Int32, mode: mode_t, stillMine: () -> Bool,
                         provenLost: () -> Bool = { false }, logger: Logger? = nil, interrupt: () throws -> Void = {}) throws -> FileDescriptor {
        let original = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW)
        let free = try Syscall.freeBytes(original.rawValue, path: path)
        let (needed, overflow) = UInt64(max(0, length)).addingReportingOverflow(reserve)
        guard !overflow, free > needed else { throw NoRoomToTakeOver(path: path, length: length, free: free) }
        let temporary = uniqueTemporary(beside: path)
        let copy = try FileDescriptor.open(temporary, flags | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
        do {
            let copied = try copy.copy(from: original.rawValue, count: length, path: path, beforeEachChunk: interrupt)
            guard copied == length else { throw ShorterThanCommitted(path: path, length: copied, committed: length) }
            try copy.fsync()
            guard stillMine() else { throw ClaimLostDuringTakeover(path: path) }
            // The name must still lead to the file copied: a taker paused here past its lease
            // would otherwise put its copy over the live file of the daemon that took the claim
            // back (whose committed lines it lacks), or back under a name that daemon's end removed.
            guard try name(original.rawValue, path: path) == .held else { throw NameChangedDuringTakeover(path: path) }
            try Syscall.rename(temporary, path)
        } catch {
            removeTemporary(temporary)
            throw error
        }
        // Asked again once named: the pause may fall between the look above and the rename.
        // Proven lost (not merely unreadable: the copy is now the name's only file), the
        // name is taken back while it leads to the copy; the other daemon gives its own file
        // the name again (`giveNameAgain`), or its end has removed it for good.
        if provenLost() {
            takeBack(path, leadingTo: copy, logger: logger)
            throw ClaimLostDuringTakeover(path: path)
        }
        return copy
    }

    /// The file to take over was replaced or removed while it was copied.
    struct NameChangedDuringTakeover: Error, CustomStringConvertible {
        let path: String
        var description: String { "\(path) was replaced or removed while it was copied (another daemon's doing)" }
    }

    /// The filesystem has no room for a takeover's copy.
    struct NoRoomToTakeOver: Error, CustomStringConvertible {
        let path: String
        let length: Int
        let free: UInt64
        var description: String { "no room to copy \(path) (\(length) bytes, \(free) free); the takeover waits for room" }
    }

    /// The claim went to another daemon while its files were being copied.
    struct ClaimLostDuringTakeover: Error, CustomStringConvertible {
        let path: String
        var description: String { "the claim was lost to another daemon while \(path) was copied" }
    }

    /// A file to take over that holds less than its journal committed.
    struct ShorterThanCommitted: Error, CustomStringConvertible {
        let path: String
        let length: Int
        let committed: Int
        var description: String { "\(path) holds \(length) bytes, fewer than the \(committed) committed" }
    }
}
