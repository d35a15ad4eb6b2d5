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

    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
