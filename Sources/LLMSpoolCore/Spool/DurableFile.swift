import Glibc

/// Crash-consistent file publication: write a hidden temporary, fsync it, rename it into
/// place, fsync the folder. After a crash the name holds either the old content or the
/// new, never a torn mix.
public enum DurableFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600, syncDirectory: Bool = true) throws {
        try write(to: path, mode: mode, syncDirectory: syncDirectory) { emit in try emit(bytes) }
    }

    /// As `write(_:to:)`, for content made in pieces: `produce` hands each piece to `emit`
    /// as it is made, so a large file is never whole in memory.
    public static func write(to path: String, mode: mode_t = 0o600, syncDirectory: Bool = true,
                             _ produce: (_ emit: ([UInt8]) throws -> Void) throws -> Void) throws {
        let temporary = SpoolLayout.temporary(for: path)
        do {
            let file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
            try produce { piece in try file.writeAll(piece) }
            try file.fsync()
            try file.close()
            // Inside: a rename refused (a folder at the name) leaves no temporary either.
            try Syscall.rename(temporary, path)
        } catch {
            do {
                try Syscall.unlinkIfPresent(temporary)
            } catch {
                // The write's failure is what the caller must hear; a hidden temporary left
                // behind is ignored by every reader and replaced by the next write.
            }
            throw error
        }
        if syncDirectory { try Syscall.fsyncDirectory(directory(of: path)) }
    }

    /// Replaces `path` atomically but without fsync: for files whose loss in a crash does
    /// no harm (the live status, a lease renewal that would expire anyway, informational
    /// task records). Readers still see the old content or the new, never a mix.
    public static func replace(_ bytes: [UInt8], at path: String, mode: mode_t = 0o600) throws {
        let temporary = SpoolLayout.temporary(for: path)
        let file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
        try file.writeAll(bytes)
        try file.close()
        try Syscall.rename(temporary, path)
    }

    /// `replace`, for a small file rewritten all the time that must still be written when
    /// the disk is full: the live status, which is what an operator reads then. Each new file
    /// has blocks allocated for `reserve` bytes (past its end when it is smaller); when a new
    /// file finds no room, or no room for its reserve (which must not be given up for a file
    /// without one), the content is written over the old file in place, into its blocks,
    /// padded with blanks to the old length (JSON allows them), so that no truncation ever
    /// shows a short file. A reader may see a mix for the instant of the write, and reads
    /// again (`LiveStatus.read`). Content that does not fit the blocks is not written at all.
    /// Only for a file one process writes: two writing in place would interleave. A
    /// filesystem that cannot reserve (FUSE) or must copy to overwrite (btrfs, ZFS) gets no
    /// such room, and a full disk refuses the write as `replace` does.
    public static func replaceKeepingRoom(_ bytes: [UInt8], at path: String, mode: mode_t = 0o600, reserve: Int) throws {
        let temporary = SpoolLayout.temporary(for: path)
        do {
            let file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
            try file.writeAll(bytes)
            var noRoomToKeep: SystemError?
            do {
                try Syscall.reserveBlocks(file.rawValue, length: max(reserve, bytes.count), path: temporary)
            } catch let error as SystemError where error.isOutOfSpace {
                noRoomToKeep = error
            } catch {
                // Best effort beyond a full disk: a filesystem that cannot (EOPNOTSUPP on
                // FUSE) keeps no room, and the status is written as `replace` writes it.
            }
            try file.close()
            if let noRoomToKeep {
                // Written over the old file, which keeps its room, when it holds the content;
                // else the new file goes in without room of its own.
                do {
                    try overwrite(bytes, at: path, else: noRoomToKeep)
                    removeTemporary(temporary)
                    return
                } catch let error as SystemError where error == noRoomToKeep {}
            }
            try Syscall.rename(temporary, path)
        } catch let error as SystemError where error.isOutOfSpace {
            // The temporary's few blocks are the disk's, not the status's.
            removeTemporary(temporary)
            try overwrite(bytes, at: path, else: error)
        }
    }

    private static func removeTemporary(_ temporary: String) {
        do {
            _ = try Syscall.unlinkIfPresent(temporary)
        } catch {
            // Left as it is: the next replacement opens it with O_TRUNC.
        }
    }

    /// Writes `bytes` over `path` from its start, padded with blanks to its length, when its
    /// blocks hold them; else throws `full` (also when there is no file to write over: the
    /// full disk is what the caller must hear).
    static func overwrite(_ bytes: [UInt8], at path: String, else full: SystemError) throws {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch {
            throw full
        }
        let info = try file.fstat()
        guard info.st_mode & S_IFMT == S_IFREG, Int(info.st_blocks) * 512 >= bytes.count else { throw full }
        let padding = max(0, Int(info.st_size) - bytes.count)
        try Syscall.pwriteAll(file.rawValue, bytes + [UInt8](repeating: 0x20, count: padding), at: 0, path: path)
    }

    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
