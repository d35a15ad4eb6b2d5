import Glibc

/// Crash-consistent file publication: write a hidden temporary, fsync it, rename it into
/// place, fsync the folder. After a crash the name holds either the old content or the
/// new, never a torn mix.
public enum DurableFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600, syncDirectory: Bool = true) throws {
        let temporary = SpoolLayout.temporary(for: path)
        let fd = try Syscall.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
        do {
            try Syscall.writeAll(fd, bytes, path: temporary)
            try Syscall.fsync(fd, path: temporary)
            Syscall.close(fd)
        } catch {
            Syscall.close(fd)
            try? Syscall.unlinkIfPresent(temporary)
            throw error
        }
        try Syscall.rename(temporary, path)
        if syncDirectory { try Syscall.fsyncDirectory(directory(of: path)) }
    }

    /// Replaces `path` atomically but without fsync: for files whose loss in a crash does
    /// no harm (the live status, a lease renewal that would expire anyway, informational
    /// task records). Readers still see the old content or the new, never a mix.
    public static func replace(_ bytes: [UInt8], at path: String, mode: mode_t = 0o600) throws {
        let temporary = SpoolLayout.temporary(for: path)
        let fd = try Syscall.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
        defer { Syscall.close(fd) }
        try Syscall.writeAll(fd, bytes, path: temporary)
        try Syscall.rename(temporary, path)
    }

    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
