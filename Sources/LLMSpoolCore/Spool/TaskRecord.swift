import Foundation
import Glibc

/// The persisted state of one task, `state/<id>.json`: its attempts (so that the attempt
/// count and the next-attempt time survive a restart) and the commit point of its outcome.
///
/// The finisher writes the record with the final status *before* it publishes the outcome,
/// so a daemon that dies half-way through publishing finds, on restart, a request whose
/// record says it already ended, and completes the clean-up instead of running it again:
/// - `done` with `result_inode` equal to the inode of `incoming/<id>.json`: remove the request.
/// - `failed`: write the error record it carries if missing, move the request to `failed`.
/// A record whose `request` identity differs from the file in `outgoing` belongs to an
/// earlier request of the same name and is ignored. Whoever moves a failed request back to
/// `outgoing` (the `retry` command) removes its record first.
public struct TaskRecord: Sendable, Equatable {
    public enum Status: String, Sendable {
        case active, done, failed, cancelled
    }

    public var id: String
    public var status: Status
    public var request: FileIdentity?
    public var history: TaskHistory
    /// The endpoint that answered, for a done task.
    public var endpoint: String?
    /// Token counts from the answer's `usage`.
    public var usage: [String: Int]?
    /// The inode of the published result, for a done task.
    public var resultInode: UInt64?
    /// The error record to publish, for a failed task.
    public var errorRecord: [UInt8]?

    public init(id: String, status: Status, request: FileIdentity?, history: TaskHistory, endpoint: String? = nil,
                usage: [String: Int]? = nil, resultInode: UInt64? = nil, errorRecord: [UInt8]? = nil) {
        self.id = id
        self.status = status
        self.request = request
        self.history = history
        self.endpoint = endpoint
        self.usage = usage
        self.resultInode = resultInode
        self.errorRecord = errorRecord
    }

    /// Written by hand, keys in sorted order: a record is written for every outcome, and
    /// Foundation's encoder (bridging, locale-aware key sorting) was most of the
    /// finisher's CPU time.
    public func encoded() -> [UInt8] {
        var members: [(String, String)] = [
            ("attempts", "[" + history.attempts.map(TaskRecord.encodeAttempt).joined(separator: ", ") + "]"),
            ("first_seen", JSONText.quoted(Timestamp.string(history.firstSeen))),
            ("id", JSONText.quoted(id)),
            ("preferred_endpoint", "\(history.preferredEndpoint)"),
            ("status", JSONText.quoted(status.rawValue)),
            ("updated_at", JSONText.quoted(Timestamp.string(Date()))),
        ]
        if let request {
            members.append(("request", "{\"device\": \(request.device), \"inode\": \(request.inode), \"mtime_ns\": \(request.modifiedNanoseconds), \"size\": \(request.size)}"))
        }
        if let notBefore = history.notBefore { members.append(("next_attempt_at", JSONText.quoted(Timestamp.string(notBefore)))) }
        if let endpoint { members.append(("endpoint", JSONText.quoted(endpoint))) }
        if let usage {
            members.append(("usage", "{" + usage.keys.sorted().map { "\(JSONText.quoted($0)): \(usage[$0]!)" }.joined(separator: ", ") + "}"))
        }
        if let resultInode { members.append(("result_inode", "\(resultInode)")) }
        if let errorRecord { members.append(("error_record", TaskRecord.embedded(errorRecord))) }
        members.sort { $0.0 < $1.0 }
        let body = members.map { "  \(JSONText.quoted($0.0)) : \($0.1)" }.joined(separator: ",\n")
        return Array("{\n\(body)\n}\n".utf8)
    }

    /// An error record as JSON inside the task record; bytes that are not JSON as a string.
    static func embedded(_ bytes: [UInt8]) -> String {
        var end = bytes.count
        while end > 0, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[end - 1]) { end -= 1 }
        let trimmed = Array(bytes[..<end])
        if (try? RawJSON.parse(trimmed)) != nil { return String(decoding: trimmed, as: UTF8.self) }
        return JSONText.quoted(String(decoding: bytes, as: UTF8.self))
    }

    static func encodeAttempt(_ attempt: AttemptEntry) -> String {
        var members: [(String, String)] = [
            ("bytes_received", "\(attempt.bytesReceived)"),
            ("bytes_sent", "\(attempt.bytesSent)"),
            ("endpoint", JSONText.quoted(attempt.endpoint)),
            ("ended_at", JSONText.quoted(Timestamp.string(attempt.endedAt))),
            ("outcome", JSONText.quoted(attempt.outcome)),
            ("started_at", JSONText.quoted(Timestamp.string(attempt.startedAt))),
        ]
        if let status = attempt.httpStatus { members.append(("http_status", "\(status)")) }
        if let message = attempt.message { members.append(("message", JSONText.quoted(message))) }
        if let timer = attempt.timer { members.append(("timer", JSONText.quoted(timer))) }
        members.sort { $0.0 < $1.0 }
        return "{" + members.map { "\(JSONText.quoted($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }

    public static func decode(_ bytes: [UInt8]) -> TaskRecord? {
        guard let object = JSONObject.parse(bytes),
              let id = object["id"] as? String,
              let status = (object["status"] as? String).flatMap(Status.init(rawValue:)),
              let firstSeen = (object["first_seen"] as? String).flatMap(Timestamp.date) else { return nil }
        var request: FileIdentity?
        if let identity = object["request"] as? [String: Any],
           let device = (identity["device"] as? NSNumber)?.uint64Value,
           let inode = (identity["inode"] as? NSNumber)?.uint64Value,
           let size = (identity["size"] as? NSNumber)?.int64Value,
           let modified = (identity["mtime_ns"] as? NSNumber)?.int64Value {
            request = FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modified)
        }
        let attempts = (object["attempts"] as? [Any] ?? []).compactMap { ($0 as? [String: Any]).flatMap(decodeAttempt) }
        let history = TaskHistory(firstSeen: firstSeen, attempts: attempts,
                                  notBefore: (object["next_attempt_at"] as? String).flatMap(Timestamp.date),
                                  preferredEndpoint: object["preferred_endpoint"] as? Int ?? 0)
        var errorRecord: [UInt8]?
        if let embedded = object["error_record"] {
            errorRecord = JSONObject.encode(embedded)
        }
        return TaskRecord(id: id, status: status, request: request, history: history,
                          endpoint: object["endpoint"] as? String, usage: object["usage"] as? [String: Int],
                          resultInode: (object["result_inode"] as? NSNumber)?.uint64Value, errorRecord: errorRecord)
    }

    /// The record of `id`, or nil when there is none or it cannot be read (then the task
    /// simply starts afresh).
    public static func load(_ layout: SpoolLayout, id: String) -> TaskRecord? {
        guard let bytes = try? FileReader.prefix(path: layout.taskRecord(id), limit: 16 << 20) else { return nil }
        return decode(bytes)
    }

    /// Writes the record by rename. `durable` adds the fsyncs that make it a commit point.
    public func write(_ layout: SpoolLayout, durable: Bool) throws {
        let path = layout.taskRecord(id)
        if durable {
            try DurableFile.write(encoded(), to: path, mode: layout.fileMode)
        } else {
            try DurableFile.replace(encoded(), at: path, mode: layout.fileMode)
        }
    }

    static func encode(_ attempt: AttemptEntry) -> [String: Any] {
        var entry: [String: Any] = [
            "started_at": Timestamp.string(attempt.startedAt),
            "ended_at": Timestamp.string(attempt.endedAt),
            "endpoint": attempt.endpoint,
            "outcome": attempt.outcome,
            "bytes_sent": attempt.bytesSent,
            "bytes_received": attempt.bytesReceived,
        ]
        if let message = attempt.message { entry["message"] = message }
        if let status = attempt.httpStatus { entry["http_status"] = status }
        if let timer = attempt.timer { entry["timer"] = timer }
        return entry
    }

    static func decodeAttempt(_ entry: [String: Any]) -> AttemptEntry? {
        guard let started = (entry["started_at"] as? String).flatMap(Timestamp.date),
              let ended = (entry["ended_at"] as? String).flatMap(Timestamp.date),
              let endpoint = entry["endpoint"] as? String, let outcome = entry["outcome"] as? String else { return nil }
        return AttemptEntry(startedAt: started, endedAt: ended, endpoint: endpoint, outcome: outcome,
                            message: entry["message"] as? String, httpStatus: entry["http_status"] as? Int,
                            timer: entry["timer"] as? String,
                            bytesSent: (entry["bytes_sent"] as? NSNumber)?.int64Value ?? 0,
                            bytesReceived: (entry["bytes_received"] as? NSNumber)?.int64Value ?? 0)
    }
}

/// What a restart should do with a request, given its record. Pure.
public enum Recovery {
    public enum Decision: Sendable, Equatable {
        case fresh
        case resume(TaskHistory)
        case alreadyEnded
    }

    public static func decide(record: TaskRecord?, identity: FileIdentity?, resultInode: UInt64?) -> Decision {
        guard let record, let identity, record.request == identity else { return .fresh }
        switch record.status {
        case .active:
            return .resume(record.history)
        case .done:
            if let published = record.resultInode, published == resultInode { return .alreadyEnded }
            return .fresh
        case .failed:
            return .alreadyEnded
        case .cancelled:
            return .fresh
        }
    }
}

/// RFC 3339 timestamps with milliseconds, as every record writes them.
public enum Timestamp {
    nonisolated(unsafe) private static let formatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
    private static let lock = NSLock()

    /// `2026-11-30T22:10:05.123Z`, as the formatter writes it, but built by hand: the
    /// formatter goes through ICU under a lock, and records and the live status are
    /// written often, from several threads.
    public static func string(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else {
            lock.lock()
            defer { lock.unlock() }
            return formatter.string(from: date)
        }
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-\(digits(Int(parts.tm_mday), 2))T"
            + "\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):\(digits(Int(parts.tm_sec), 2)).\(digits(fraction, 3))Z"
    }

    public static func date(_ text: String) -> Date? {
        lock.lock()
        defer { lock.unlock() }
        return formatter.date(from: text)
    }
}

extension FileIdentity {
    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                  modifiedNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }
}
