import CSystem
import Glibc

/// The one wrapper for system calls: EINTR is retried, every failure throws a
/// `SystemError` that names the call and the path.
public enum Syscall {
    @inline(__always)
    static func retrying<T: FixedWidthInteger>(_ call: String, _ path: String?, _ body: () -> T) throws -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw SystemError(errno: code, call: call, path: path)
        }
    }

    /// A file this creates gets exactly `mode`: the umask (a unit's `UMask=0077`) must not
    /// take away the group bits a setting asked for, so the mode is set again with fchmod.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws -> Int32 {
        let fd = try retrying("open", path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        if flags & O_CREAT != 0 {
            do {
                _ = try retrying("fchmod", path) { Glibc.fchmod(fd, mode) }
            } catch {
                Glibc.close(fd)
                throw error
            }
        }
        return fd
    }

    /// Closes without retrying: on Linux the descriptor is gone even when close reports
    /// EINTR. EBADF means the descriptor was closed twice or never opened, a defect that must
    /// not pass silently (another thread may own that number by now); EIO and ENOSPC from a
    /// network filesystem mean written data may be lost, and are reported to the caller that
    /// asks with `closeChecked`.
    public static func close(_ fd: Int32) {
        do {
            try closeChecked(fd)
        } catch let error as SystemError {
            precondition(error.errno != EBADF, "close(\(fd)): the descriptor was not open (closed twice?)")
        } catch {
        }
    }

    /// Closes and reports what close said, EINTR excepted.
    public static func closeChecked(_ fd: Int32, path: String? = nil) throws {
        guard Glibc.close(fd) == -1 else { return }
        let code = Glibc.errno
        if code == EINTR { return }
        throw SystemError(errno: code, call: "close", path: path)
    }

    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String? = nil) throws -> Int {
        try retrying("read", path) { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Reads at `offset` without moving the file's position.
    public static func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, path: String? = nil) throws -> Int {
        try retrying("pread", path) { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Exactly `count` bytes at `offset`; fewer only when the file ends first.
    public static func preadAll(_ fd: Int32, count: Int, at offset: Int, path: String? = nil) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var total = 0
        while total < count {
            let got = try bytes.withUnsafeMutableBytes { buffer in
                try pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]), at: offset + total, path: path)
            }
            if got == 0 { break }
            total += got
        }
        bytes.removeLast(count - total)
        return bytes
    }

    public static func ftruncate(_ fd: Int32, length: Int, path: String? = nil) throws {
        _ = try retrying("ftruncate", path) { Glibc.ftruncate(fd, off_t(length)) }
    }

    public static func fdatasync(_ fd: Int32, path: String? = nil) throws {
        _ = try retrying("fdatasync", path) { Glibc.fdatasync(fd) }
    }

    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String? = nil) throws {
        var offset = 0
        while offset < bytes.count {
            let written = try retrying("write", path) {
                Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            }
            offset += written
        }
    }

    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String? = nil) throws {
        try bytes.withUnsafeBytes { try writeAll(fd, $0, path: path) }
    }

    /// Exactly `bytes` at `offset`, over what is there.
    public static func pwriteAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int, path: String? = nil) throws {
        var done = 0
        while done < bytes.count {
            done += try bytes.withUnsafeBytes { buffer in
                try retrying("pwrite", path) { Glibc.pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done)) }
            }
        }
    }

    /// Allocates blocks for the file up to `length` bytes without changing its size, so
    /// that later writes up to there need no free space (`fallocate` `FALLOC_FL_KEEP_SIZE`).
    /// EOPNOTSUPP where the filesystem cannot (FUSE, NFS before 4.2).
    public static func reserveBlocks(_ fd: Int32, length: Int, path: String? = nil) throws {
        _ = try retrying("fallocate", path) { llms_reserve_blocks(fd, length) }
    }

    public static func flock(_ fd: Int32, _ operation: Int32, path: String? = nil) throws {
        _ = try retrying("flock", path) { llms_flock(fd, operation) }
    }

    public static func fsync(_ fd: Int32, path: String? = nil) throws {
        _ = try retrying("fsync", path) { Glibc.fsync(fd) }
    }

    /// Drops a file's clean pages from the page cache, so that the next read asks the
    /// filesystem: a FUSE client (GlusterFS keeps pages across opens) would otherwise serve
    /// what another mount has since overwritten. Advisory: its error number, 0 when done.
    @discardableResult
    public static func dropCachedPages(_ fd: Int32) -> Int32 {
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
    }

    /// Starts writing a file's dirty pages to disk without waiting for them: the fsync
    /// that follows has less to do. Advisory, so a failure is ignored.
    public static func startWriteback(_ fd: Int32) {
        _ = llms_start_writeback(fd)
    }

    /// Sets an extended attribute of a file by name, links not followed. ENOTSUP (the same
    /// number as EOPNOTSUPP on Linux) means the filesystem keeps no such attribute.
    public static func setxattr(_ path: String, _ name: String, _ value: [UInt8]) throws {
        _ = try retrying("setxattr", path) { value.withUnsafeBytes { lsetxattr(path, name, $0.baseAddress, $0.count, 0) } }
    }

    /// Sets an extended attribute through a descriptor: the file written, whatever its name now.
    public static func fsetxattr(_ fd: Int32, _ name: String, _ value: [UInt8], path: String? = nil) throws {
        _ = try retrying("fsetxattr", path) { value.withUnsafeBytes { CSystem.fsetxattr(fd, name, $0.baseAddress, $0.count, 0) } }
    }

    /// An extended attribute of a file by name (links not followed), at most `limit` bytes;
    /// nil when the file has no such attribute (ENODATA). A longer value is ERANGE.
    public static func getxattr(_ path: String, _ name: String, limit: Int) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: max(limit, 1))
        do {
            let count = try retrying("getxattr", path) { buffer.withUnsafeMutableBytes { lgetxattr(path, name, $0.baseAddress, $0.count) } }
            return Array(buffer.prefix(count))
        } catch let error as SystemError where error.errno == ENODATA {
            return nil
        }
    }

    public static func rename(_ from: String, _ to: String) throws {
        _ = try retrying("rename", "\(from) -> \(to)") { Glibc.rename(from, to) }
    }

    public static func unlink(_ path: String) throws {
        _ = try retrying("unlink", path) { Glibc.unlink(path) }
    }

    /// Unlinks, treating an already-missing file as success. Returns whether this call
    /// removed it: false when it was gone already.
    @discardableResult
    public static func unlinkIfPresent(_ path: String) throws -> Bool {
        do {
            try unlink(path)
            return true
        } catch let error as SystemError where error.errno == ENOENT {
            return false
        }
    }

    /// The folder gets exactly `mode`, whatever the umask (see `open`).
    public static func mkdir(_ path: String, mode: mode_t) throws {
        _ = try retrying("mkdir", path) { Glibc.mkdir(path, mode) }
        _ = try retrying("chmod", path) { Glibc.chmod(path, mode) }
    }

    /// The local TCP port of a connected socket (IPv4 or IPv6), in host order.
    public static func localPort(_ socket: Int32) throws -> Int {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                try retrying("getsockname", nil) { Glibc.getsockname(socket, generic, &length) }
            }
        }
        switch Int32(address.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) } }
        case AF_INET6:
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) } }
        default:
            throw SystemError(errno: EAFNOSUPPORT, call: "getsockname", path: nil)
        }
    }

    public static func fstat(_ fd: Int32, path: String? = nil) throws -> stat {
        var info = stat()
        _ = try retrying("fstat", path) { Glibc.fstat(fd, &info) }
        return info
    }

    /// The bytes an unprivileged writer may still use on the filesystem of `fd`
    /// (saturated: no filesystem's figures can overflow it). A filesystem that reports no
    /// size at all (a FUSE filesystem without `statfs` answers zeros) is taken to have room.
    public static func freeBytes(_ fd: Int32, path: String? = nil) throws -> UInt64 {
        var info = statvfs()
        _ = try retrying("fstatvfs", path) { Glibc.fstatvfs(fd, &info) }
        return freeBytes(info)
    }

    /// Whether the filesystem holding `path` is mounted read-only: no one can write a folder
    /// there, whatever its mode says.
    public static func isReadOnlyMount(_ path: String) throws -> Bool {
        var info = statvfs()
        _ = try retrying("statvfs", path) { statvfs(path, &info) }
        return info.f_flag & UInt(ST_RDONLY) != 0
    }

    /// `freeBytes` of the filesystem holding `path`, for a caller with no descriptor open there.
    public static func freeBytes(path: String) throws -> UInt64 {
        var info = statvfs()
        _ = try retrying("statvfs", path) { statvfs(path, &info) }
        return freeBytes(info)
    }

    private static func freeBytes(_ info: statvfs) -> UInt64 {
        if info.f_blocks == 0 { return .max }
        let (bytes, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow ? .max : bytes
    }

    /// Moves the descriptor's position to the end of its file; returns that offset.
    @discardableResult
    public static func seekToEnd(_ fd: Int32, path: String? = nil) throws -> Int {
        Int(try retrying("lseek", path) { Glibc.lseek(fd, 0, SEEK_END) })
    }

    /// A second name for the file at `from`; fails (EEXIST) when `to` names a file already.
    public static func link(_ from: String, _ to: String) throws {
        _ = try retrying("link", to) { Glibc.link(from, to) }
    }

    public static func lstat(_ path: String) throws -> stat {
        var info = stat()
        _ = try retrying("lstat", path) { Glibc.lstat(path, &info) }
        return info
    }

    /// `statfs`'s `f_type` of the filesystem holding `path` (links followed).
    public static func fileSystemType(_ path: String) throws -> Int64 {
        Int64(try retrying("statfs", path) { llms_filesystem_type(path) })
    }

    /// Where the link at `path` points (its text, up to 4 KiB).
    public static func readLink(_ path: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = try retrying("readlink", path) { Glibc.readlink(path, &buffer, buffer.count) }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The path with every link, `.` and `..` resolved (`realpath`).
    public static func realPath(_ path: String) throws -> String {
        while true {
            if let resolved = Glibc.realpath(path, nil) {
                defer { free(resolved) }
                return String(cString: resolved)
            }
            let error = errno
            if error != EINTR { throw SystemError(errno: error, call: "realpath", path: path) }
        }
    }

    /// `stat`: links followed.
    public static func statFollowingLinks(_ path: String) throws -> stat {
        var info = stat()
        _ = try retrying("stat", path) { Glibc.fstatat(AT_FDCWD, path, &info, 0) }
        return info
    }

    /// `lstat` of a path given as raw bytes (a name need not be UTF-8); no NUL inside.
    public static func lstat(raw path: [UInt8]) throws -> stat {
        var info = stat()
        let terminated = path + [0]
        _ = try retrying("lstat", String(decoding: path, as: UTF8.self)) {
            terminated.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { Glibc.lstat($0.baseAddress!, &info) } }
        }
        return info
    }

    /// Whether a name exists (links are not followed). Only "no such file" means absent:
    /// any other failure (a stale handle, no permission, EIO) is an error the caller sees.
    public static func exists(_ path: String) throws -> Bool {
        do {
            _ = try lstat(path)
            return true
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ENOTDIR {
            return false
        }
    }

    /// For read-only views (`status`, `show`, the command line): any failure to look counts
    /// as absent. The daemon's decisions use `exists`, which reports failures.
    public static func isPresent(_ path: String) -> Bool {
        kind(path) != nil
    }

    /// Whether a folder (not a link to one) is at `path` now, as `isPresent`.
    public static func isFolder(_ path: String) -> Bool {
        kind(path) == S_IFDIR
    }

    /// Whether a regular file (not a link, folder or FIFO) is at `path` now, as `isPresent`.
    public static func isRegularFile(_ path: String) -> Bool {
        kind(path) == S_IFREG
    }

    /// The `S_IFMT` bits of what is at `path` (a link not followed), nil when nothing can be seen.
    private static func kind(_ path: String) -> mode_t? {
        var info = stat()
        return Glibc.lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    /// Makes a completed rename or unlink in `directory` durable.
    public static func fsyncDirectory(_ directory: String) throws {
        let folder = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY)
        try folder.fsync()
    }

    /// The names in a directory as raw bytes (a name need not be UTF-8), without "." and "..".
    public static func listDirectoryRaw(_ path: String) throws -> [[UInt8]] {
        try listDirectoryRaw(raw: Array(path.utf8))
    }

    /// The same, for a folder whose path is given as raw bytes (one of its names need not be UTF-8).
    public static func listDirectoryRaw(raw path: [UInt8]) throws -> [[UInt8]] {
        let terminated = path + [0]
        guard let dir = terminated.withUnsafeBufferPointer({ $0.withMemoryRebound(to: CChar.self) { opendir($0.baseAddress!) } }) else {
            throw SystemError(errno: Glibc.errno, call: "opendir", path: String(decoding: path, as: UTF8.self))
        }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while true {
            Glibc.errno = 0
            guard let entry = readdir(dir) else {
                if Glibc.errno != 0 { throw SystemError(errno: Glibc.errno, call: "readdir", path: String(decoding: path, as: UTF8.self)) }
                break
            }
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: UInt8.self, capacity: Int(NAME_MAX) + 1) { Array(UnsafeBufferPointer(start: $0, count: strlen(UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)))) }
            }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names
    }

    /// Renames a file whose name is given as raw bytes, within one directory.
    public static func rename(in directory: String, rawName: [UInt8], to newName: String) throws {
        let from = Array(directory.utf8) + [0x2F] + rawName + [0]
        let to = "\(directory)/\(newName)"
        _ = try from.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { chars in
                try retrying("rename", to) { Glibc.rename(chars.baseAddress!, to) }
            }
        }
    }

    /// The names in a directory, without "." and "..", read without a stat per entry.
    /// A name that is not UTF-8 comes back with replacement characters: callers that must
    /// act on such names use `listDirectoryRaw`.
    public static func listDirectory(_ path: String) throws -> [String] {
        try listDirectoryRaw(path).map { String(decoding: $0, as: UTF8.self) }
    }
}
