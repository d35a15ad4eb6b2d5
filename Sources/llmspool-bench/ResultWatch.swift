import Foundation
import Glibc
import LLMSpoolCore

/// Waits for results in `incoming/` by the inotify events of their renames. The harness
/// used to list the folder every 10 ms: beside P1 (10,000 results) the harness took 119
/// ticks of 1,000 over 5 s with that listing and 66 with this watch (staging the requests
/// included in both), CPU taken from the two cores the daemon and the stub share, while
/// the disk probe P1 is compared with runs with nothing beside it.
struct ResultWatch {
    /// A result's name: `<id>.json` (not a hidden temporary), as the listing counted it.
    static func isResult(_ name: some Collection<UInt8>) -> Bool {
        name.count > 5 && name.first != 0x2E && Array(name.suffix(5)) == Array(".json".utf8)
    }

    /// Returns when `count` results are in `folder` (those already there count), at most
    /// `timeout` seconds from now. Events are hints: the folder is listed again on a queue
    /// overflow and once a second, so a missed event delays the answer, never loses it.
    static func wait(folder: String, count: Int, timeout: Double) throws -> Date {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw SystemError(errno: errno, call: "inotify_init1", path: folder) }
        defer { close(fd) }
        // The watch before the listing: a rename between the two is seen at least once.
        guard inotify_add_watch(fd, folder, UInt32(IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0 else {
            throw SystemError(errno: errno, call: "inotify_add_watch", path: folder)
        }
        var seen = Set<[UInt8]>()
        func list() throws {
            for name in try Syscall.listDirectoryRaw(folder) where isResult(name) { seen.insert(name) }
        }
        try list()
        var lastListing = Date()
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while seen.count < count {
            let now = Date()
            guard now < deadline else { throw ConfigError("only \(seen.count) of \(count) results after \(timeout) s") }
            if now.timeIntervalSince(lastListing) >= 1 {
                try list()
                lastListing = now
                continue
            }
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollfd, 1, 100)
            if ready < 0 && errno != EINTR { throw SystemError(errno: errno, call: "poll", path: folder) }
            guard ready > 0 else { continue }
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw SystemError(errno: errno, call: "read", path: folder)
            }
            var offset = 0
            var overflow = false
            while offset + 16 <= got {
                let (mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self), Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { overflow = true }
                let name = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                if isResult(name) { seen.insert(Array(name)) }
                offset += 16 + length
            }
            if overflow {
                try list()
                lastListing = Date()
            }
            // Many results land within a millisecond of each other under load: one read
            // then serves them all, at the cost of at most 2 ms on the time measured.
            if seen.count < count { usleep(2_000) }
        }
        return Date()
    }
}
