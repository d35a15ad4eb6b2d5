import Glibc

extension Syscall {
    /// Removes `path` and, when it is a folder, everything under it; a link is removed,
    /// never followed. Iterative, so that a hostile nest of folders cannot exhaust the stack.
    /// A name gone meanwhile is no failure; any other stops the removal and names the path.
    public static func removeTree(_ path: String) throws {
        var pending: [(path: [UInt8], emptied: Bool)] = [(Array(path.utf8), false)]
        while let (current, emptied) = pending.popLast() {
            let info: stat
            do {
                info = try lstat(raw: current)
            } catch let error as SystemError where error.errno == ENOENT {
                continue
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                try removeRaw("unlink", current) { Glibc.unlink($0) }
                continue
            }
            if emptied {
                try removeRaw("rmdir", current) { Glibc.rmdir($0) }
                continue
            }
            pending.append((current, true))
            for name in try listDirectoryRaw(raw: current) { pending.append((current + [0x2F] + name, false)) }
        }
    }

    /// `unlink` or `rmdir` of a raw path; gone already is fine.
    private static func removeRaw(_ call: String, _ path: [UInt8], _ body: (UnsafePointer<CChar>) -> Int32) throws {
        let terminated = path + [0]
        do {
            _ = try retrying(call, String(decoding: path, as: UTF8.self)) {
                terminated.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) } }
            }
        } catch let error as SystemError where error.errno == ENOENT {
            return
        }
    }
}
