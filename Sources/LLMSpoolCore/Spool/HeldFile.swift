import Glibc

/// A file in `incoming` the daemon writes through a descriptor it holds open, whose name
/// someone took away while it was written (`rm -rf incoming`, the folder made again or
/// not). Its bytes are still in the open file: an answer already received, or a batch's
/// committed lines. Dropped, the answer would only come back from the provider by sending
/// the request again, and paying for it again.
enum HeldFile {
    /// Whether `path` no longer names the file open as `fd`: no file there, or another.
    static func lostName(_ fd: Int32, path: String) throws -> Bool {
        let held = try Syscall.fstat(fd, path: path)
        let named: stat
        do {
            named = try Syscall.lstat(path)
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ENOTDIR {
            return true
        }
        return named.st_dev != held.st_dev || named.st_ino != held.st_ino
    }

    /// A new file at `path` with every byte of the file open as `fd`, fsynced, its folder
    /// made again first if it is gone (logged as any folder recreated). Opened with `flags`
    /// (`O_RDWR` at least: the copy may have to be given a name again itself), positioned
    /// at its end. `fd` must be readable; its position is not moved.
    static func giveNameAgain(from fd: Int32, to path: String, flags: Int32, layout: SpoolLayout, logger: Logger) throws -> FileDescriptor {
        layout.recreateMissingFolders(logger: logger)
        let copy = try FileDescriptor.createNew(path, flags | O_NOFOLLOW, mode: layout.fileMode)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileReader.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while true {
            let count = try Syscall.pread(fd, into: buffer, at: offset, path: path)
            if count == 0 { break }
            try copy.writeAll(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += count
        }
        try copy.fsync()
        return copy
    }
}
