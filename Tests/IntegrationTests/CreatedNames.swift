import Foundation
import Glibc
import LLMSpoolCore

/// Every name created in a folder while it is watched, from inotify's queue: a file that
/// lived for a moment is seen as surely as one that stayed.
final class CreatedNames {
    private let fd: Int32

    init(watching directory: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw SystemError(errno: errno, call: "inotify_init1", path: directory) }
        guard inotify_add_watch(fd, directory, UInt32(IN_CREATE)) >= 0 else {
            let error = SystemError(errno: errno, call: "inotify_add_watch", path: directory)
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// The names created since the watch began (or since the last call), in order. Throws
    /// when the kernel's queue overflowed: then some creations are unknown.
    func drain() throws -> [String] {
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EAGAIN { return names }
            guard count > 0 else { throw SystemError(errno: errno, call: "read (inotify)", path: nil) }
            var offset = 0
            while offset < count {
                let (mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.load(fromByteOffset: offset + 4, as: UInt32.self), Int(raw.load(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { throw SystemError(errno: EOVERFLOW, call: "inotify (queue overflow)", path: nil) }
                let start = offset + 16
                let name = buffer[start..<(start + length)].prefix { $0 != 0 }
                if !name.isEmpty { names.append(String(decoding: name, as: UTF8.self)) }
                offset = start + length
            }
        }
    }
}
