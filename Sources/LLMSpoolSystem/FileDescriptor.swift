import Glibc

/// An open descriptor with exactly one owner, closed exactly once: by `close()`, which
/// reports what close said, or else when its owner's scope ends.
///
/// Noncopyable, so the compiler refuses a second close or a use after close; a number
/// that must leave this discipline (a struct that crosses threads, a C library that takes
/// the descriptor over) leaves it explicitly with `release()`.
public struct FileDescriptor: ~Copyable, Sendable {
    /// The descriptor's number; -1 once closed or released, which only `deinit` sees.
    public private(set) var rawValue: Int32
    /// The file it was opened on, for error messages.
    public let path: String?

    /// Takes over `rawValue`, which must be open and owned by nobody else.
    public init(owning rawValue: Int32, path: String? = nil) {
        self.rawValue = rawValue
        self.path = path
    }

    /// Opens through `Syscall.open` (close-on-exec, exact mode for a created file).
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws -> FileDescriptor {
        FileDescriptor(owning: try Syscall.open(path, flags, mode: mode), path: path)
    }

    /// Creates `path` as a new file (`O_CREAT | O_EXCL` added to `flags`), never an old one
    /// truncated: a file of that name (a leftover, or one a daemon that lost the request may
    /// still write to) is unlinked and the create tried once more. The unlink is made only
    /// when a file is there, so the usual create costs one lookup of the name, not two.
    public static func createNew(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws -> FileDescriptor {
        let exclusive = flags | O_CREAT | O_EXCL
        do {
            return try open(path, exclusive, mode: mode)
        } catch let error as SystemError where error.errno == EEXIST {
            try Syscall.unlinkIfPresent(path)
            return try open(path, exclusive, mode: mode)
        }
    }

    /// Closes now and reports a failure (EIO or ENOSPC from a network filesystem mean
    /// written data may be lost); the descriptor is gone either way.
    public consuming func close() throws {
        let fd = rawValue
        rawValue = -1
        try Syscall.closeChecked(fd, path: path)
    }

    /// Removes `path`, the file this descriptor is open on, and only then closes it: a file
    /// that is done with goes this way, not by a close and then an unlink.
    ///
    /// sshfs (libfuse with `hard_remove` off) renames a file unlinked while open on its
    /// mount to `.fuse_hidden*`, and deletes that when the last descriptor's release comes.
    /// A close's release reaches it after close has returned, so an unlink made just after
    /// a close can overtake it: the file, still counted open, is hidden, and the release
    /// already under way misses the hidden name; the file is left for good (one in five of
    /// a create, close, unlink on sshfs 3.7). Unlinked while open, the hiding is over before
    /// the unlink returns, and the close's release deletes the hidden file, a SIGKILL's too.
    /// Elsewhere an open file's unlink is plain POSIX (NFS removes its `.nfs*` at the close).
    /// A missing file is no failure; the descriptor is closed whatever the unlink said, and
    /// the unlink's failure is the one reported.
    public consuming func unlinkThenClose(_ path: String) throws {
        var failure: (any Error)?
        do { try Syscall.unlinkIfPresent(path) } catch { failure = error }
        do { try close() } catch { failure = failure ?? error }
        if let failure { throw failure }
    }

    /// Gives up ownership without closing: the caller closes the number by convention.
    public consuming func release() -> Int32 {
        let fd = rawValue
        rawValue = -1
        return fd
    }

    deinit {
        // A close that fails here has no caller to tell; owners that must know call close().
        if rawValue >= 0 { Syscall.close(rawValue) }
    }

    public func writeAll(_ bytes: [UInt8]) throws {
        try Syscall.writeAll(rawValue, bytes, path: path)
    }

    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        try Syscall.writeAll(rawValue, bytes, path: path)
    }

    /// Appends the bytes of the file open as `source` from its start, `count` of them at
    /// most (all when nil), read with `pread` (the source's position is not moved). Returns
    /// how many were copied: fewer than `count` when the source is shorter. `beforeEachChunk`
    /// may stop a long copy by throwing.
    @discardableResult
    public func copy(from source: Int32, count: Int?, path: String?, beforeEachChunk: () throws -> Void = {}) throws -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileReader.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while count.map({ offset < $0 }) ?? true {
            try beforeEachChunk()
            let wanted = min(buffer.count, count.map { $0 - offset } ?? buffer.count)
            let read = try Syscall.pread(source, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), at: offset, path: path)
            if read == 0 { break }
            try writeAll(UnsafeRawBufferPointer(rebasing: buffer[0..<read]))
            offset += read
        }
        return offset
    }

    public func fsync() throws {
        try Syscall.fsync(rawValue, path: path)
    }

    public func fstat() throws -> stat {
        try Syscall.fstat(rawValue, path: path)
    }
}
