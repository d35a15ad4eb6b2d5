import Glibc

/// `state/.spool-id`: the spool's id, made by the first daemon that starts on it. A share
/// mounted again has a new device number; the id read through its root says it is still
/// this spool (`SpoolRootPin`).
enum SpoolIDFile {
    /// The id, made first when there is none (or what is there is not one). Daemons
    /// starting together on a shared spool each write their own under a name of their own
    /// and link it into place: one wins, and every one reads the winner's.
    static func readOrMake(_ layout: SpoolLayout, logger: Logger) throws -> String {
        switch try read(layout.spoolIDFile) {
        case .id(let id)?:
            return id
        case .unusable?:
            logger.warning("the spool's id file holds no id; a new one is made", ["path": LogValue(layout.spoolIDFile)])
            try DurableFile.replace(Array((newID() + "\n").utf8), at: layout.spoolIDFile, mode: layout.fileMode)
        case nil:
            let own = "\(layout.state)/.spool-id.\(getpid()).tmp"
            try DurableFile.write(Array((newID() + "\n").utf8), to: own, mode: layout.fileMode, syncDirectory: false)
            defer { logger.bestEffort("removing the spool id's temporary") { _ = try Syscall.unlinkIfPresent(own) } }
            do {
                try Syscall.link(own, layout.spoolIDFile)
            } catch let error as SystemError where error.errno == EEXIST {
                // Another daemon's won.
            } catch let error as SystemError where error.errno == EPERM || error.errno == ENOTSUP || error.errno == ENOSYS || error.errno == EOPNOTSUPP {
                // A filesystem without hard links (some FUSE ones): the last rename wins,
                // and a daemon that read its own id before it did does not follow a remount.
                try Syscall.rename(own, layout.spoolIDFile)
            }
            try Syscall.fsyncDirectory(layout.state)
        }
        guard case .id(let id)? = try read(layout.spoolIDFile) else {
            throw SystemError(errno: EIO, call: "read", path: layout.spoolIDFile)
        }
        return id
    }

    /// What the file holds.
    enum Content: Equatable {
        case id(String)
        case unusable
    }

    /// The id at `path`; nil when there is no file.
    static func read(_ path: String) throws -> Content? {
        let bytes: [UInt8]
        do {
            bytes = try FileReader.prefix(path: path, limit: 256)
        } catch let error as SystemError where error.errno == ENOENT {
            return nil
        }
        let trimmed = bytes.filter { $0 != 0x0A && $0 != 0x0D && $0 != 0x20 && $0 != 0x09 }
        guard trimmed.count + 1 >= bytes.count, (16...64).contains(trimmed.count),
              trimmed.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            return .unusable
        }
        return .id(String(decoding: trimmed, as: UTF8.self))
    }

    /// 128 random bits in hex.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
