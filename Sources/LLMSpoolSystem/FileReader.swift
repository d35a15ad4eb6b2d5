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
