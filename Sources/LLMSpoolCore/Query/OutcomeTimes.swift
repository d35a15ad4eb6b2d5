import Foundation
import Glibc

/// When each of a request's outcomes happened, dated by the outcome itself: a failure by
/// its record's `failed_at`, a result by the result file's own time. The request file's
/// mtime says nothing (`cp -p`, `mv` and `retry` keep it old).
public struct OutcomeTimes: Sendable, Equatable {
    public var done: Date?
    public var failed: Date?

    public init(done: Date? = nil, failed: Date? = nil) {
        self.done = done
        self.failed = failed
    }

    public init(layout: SpoolLayout, id: String) {
        done = OutcomeTimes.modified(layout.result(id))
        if Syscall.isPresent(layout.errorRecord(id)) {
            failed = OutcomeTimes.failedAt(layout.errorRecord(id)) ?? OutcomeTimes.modified(layout.errorRecord(id))
        } else if let request = SpoolActions.existing(layout.failed, id) {
            // No record: the move into failed/ is the outcome, and a rename sets the ctime.
            failed = OutcomeTimes.changed(request)
        }
    }

    /// The failure is stale: a later result of the same id replaced it.
    public var failureSuperseded: Bool {
        guard let done, let failed else { return false }
        return done > failed
    }

    /// The result is stale: a later failure of the same id came after it.
    public var resultSuperseded: Bool {
        guard let done, let failed else { return false }
        return failed >= done
    }

    /// The latest outcome's time.
    public var latest: Date? { [done, failed].compactMap { $0 }.max() }

    static func failedAt(_ path: String) -> Date? {
        // No readable record: no time, and the caller falls back to the file's own.
        guard let bytes = try? FileReader.prefix(path: path, limit: 1 << 20), let record = JSONObject.parse(bytes),
              let text = record["failed_at"] as? String else { return nil }
        return Timestamp.date(text)
    }

    static func modified(_ path: String) -> Date? {
        // A file gone or unreadable has no time to show.
        guard let info = try? Syscall.lstat(path) else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    static func changed(_ path: String) -> Date? {
        // A file gone or unreadable has no time to show.
        guard let info = try? Syscall.lstat(path) else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9)
    }
}
