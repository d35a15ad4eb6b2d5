import Glibc

/// Reads a regular file in fixed-size chunks so that no caller holds a whole body in memory.
public struct FileReader {
    public static let chunkSize = 64 * 1024

    /// Calls `body` with each chunk of the file at `path`, in order.
    public static func forEachChunk(path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW)
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

    /// A path that names something other than a regular file.
    public struct NotARegularFile: Error, Sendable, CustomStringConvertible {
        public let path: String
        public var description: String { "\(path) is not a regular file (a FIFO, device or folder is never read)" }
    }

    /// Reads at most `limit` bytes from the start of a regular file, refusing anything else
    /// before a read: a FIFO would block the reader until someone writes to it (opened
    /// with `O_NONBLOCK`, its open does not wait for a writer either).
    public static func prefixOfRegularFile(path: String, limit: Int) throws -> [UInt8] {
        let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        guard try file.fstat().st_mode & S_IFMT == S_IFREG else { throw NotARegularFile(path: path) }
        var bytes: [UInt8] = []
        try forEachChunk(fd: file.rawValue, path: path) { chunk in
            let room = limit - bytes.count
            if room <= 0 { return }
            bytes.append(contentsOf: chunk.prefix(room))
        }
        return bytes
    }

    /// Reads at most `limit` bytes from the start of the file.
    public static func prefix(path: String, limit: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try forEachChunk(path: path) { chunk in
            let room = limit - bytes.count
            if room <= 0 { return }
            bytes.append(contentsOf: chunk.prefix(room))
        }
        return bytes
    }
}
