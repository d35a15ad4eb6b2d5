import Glibc

/// Reads a regular file in fixed-size chunks so that no caller holds a whole body in memory.
public struct FileReader {
    public static let chunkSize = 64 * 1024

    /// Calls `body` with each chunk of the file at `path`, in order.
    public static func forEachChunk(path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let file = try openRegular(path)
        try forEachChunk(fd: file.rawValue, path: path, body)
    }

    public static func forEachChunk(fd: Int32, path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try Syscall.read(fd, into: buffer, path: path)
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Calls `body` with each line of the file at `path`, without its newline (a last line
    /// without one too); a line is held whole only while it is handed over.
    public static func forEachLine(path: String, _ body: ([UInt8]) throws -> Void) throws {
        let file = try openRegular(path)
        try forEachLine(fd: file.rawValue, path: path, body)
    }

    /// The same from an open file. `maximumLength`: a line longer throws `LineTooLong`
    /// rather than grow without end; `unterminatedLast`: whether a last line without its
    /// newline is handed over (a torn append is not, in a journal).
    public static func forEachLine(fd: Int32, path: String, maximumLength: Int = .max, unterminatedLast: Bool = true,
                                   _ body: ([UInt8]) throws -> Void) throws {
        var pending: [UInt8] = []
        try forEachChunk(fd: fd, path: path) { chunk in
            var start = 0
            for (index, byte) in chunk.enumerated() where byte == 0x0A {
                pending.append(contentsOf: chunk[start..<index])
                try body(pending)
                pending.removeAll(keepingCapacity: true)
                start = index + 1
            }
            pending.append(contentsOf: chunk[start...])
            if pending.count > maximumLength { throw LineTooLong(path: path, limit: maximumLength) }
        }
        if unterminatedLast && !pending.isEmpty { try body(pending) }
    }

    /// A line longer than a reader takes.
    public struct LineTooLong: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let limit: Int
        public var description: String { "\(path) has a line longer than \(limit) bytes" }
    }

    /// A path that names something other than a regular file.
    public struct NotARegularFile: Error, Sendable, CustomStringConvertible {
        public let path: String
        public var description: String { "\(path) is not a regular file (a FIFO, device or folder is never read)" }
    }

    /// Reads at most `limit` bytes from the start of a regular file, refusing anything else
    /// before a read. `followingLinks`: for the operator's own files outside the spool (the
    /// configuration, a key file, a CA file), which deployments give as links (a Kubernetes
    /// secret, NixOS's `/etc`); the spool's files never are.
    public static func prefix(path: String, limit: Int, followingLinks: Bool) throws -> [UInt8] {
        let file = try openRegular(path, followingLinks: followingLinks)
        return try prefix(fd: file.rawValue, path: path, limit: limit)
    }

    /// The same for the spool's files: a link is refused.
    public static func prefix(path: String, limit: Int) throws -> [UInt8] {
        try prefix(path: path, limit: limit, followingLinks: false)
    }

    /// Every read by name goes through here: a FIFO put where a file of the spool's (or a
    /// key file) is expected would block its reader, the daemon's start or `status`, for
    /// ever; opened with `O_NONBLOCK`, its open does not wait for a writer either.
    /// The file at `path`, open, when it is a regular file: a caller that checks the file
    /// (its mode) and reads it through one descriptor checks what it reads.
    public static func openRegular(_ path: String, followingLinks: Bool = false) throws -> FileDescriptor {
        let file = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | (followingLinks ? 0 : O_NOFOLLOW))
        guard try file.fstat().st_mode & S_IFMT == S_IFREG else { throw NotARegularFile(path: path) }
        return file
    }

    /// `prefix(fd:path:limit:)` from the file's start, by `pread`: a writer's descriptor
    /// (its offset at the end) reads back what it wrote without a second open.
    public static func prefixFromStart(fd: Int32, path: String, limit: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while bytes.count < limit {
            let count = try Syscall.pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(chunkSize, limit - bytes.count)]),
                                          at: bytes.count, path: path)
            if count == 0 { break }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return bytes
    }

    /// Reads until `limit` bytes or the end, whichever comes first: a file larger than the
    /// limit (a sparse one of terabytes) is not read past it.
    public static func prefix(fd: Int32, path: String, limit: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while bytes.count < limit {
            let count = try Syscall.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(chunkSize, limit - bytes.count)]), path: path)
            if count == 0 { break }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return bytes
    }
}
