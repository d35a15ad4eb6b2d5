import Foundation
import Glibc

/// Reading and writing `state/<id>.json`.
extension TaskRecord {
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
            var fields = "\"device\": \(request.device), \"inode\": \(request.inode), \"mtime_ns\": \(request.modifiedNanoseconds), \"size\": \(request.size)"
            if let born = request.bornNanoseconds { fields = "\"btime_ns\": \(born), " + fields }
            if let hash = request.contentHash { fields += ", \"fnv1a\": \"\(String(hash, radix: 16))\"" }
            members.append(("request", "{" + fields + "}"))
        }
        if history.unfinishedStarts > 0 { members.append(("unfinished_starts", "\(history.unfinishedStarts)")) }
        if let notBefore = history.notBefore { members.append(("next_attempt_at", JSONText.quoted(Timestamp.string(notBefore)))) }
        if let endpoint { members.append(("endpoint", JSONText.quoted(endpoint))) }
        if let dialect { members.append(("dialect", JSONText.quoted(dialect))) }
        if let usage {
            members.append(("usage", "{" + usage.keys.sorted().map { "\(JSONText.quoted($0)): \(usage[$0]!)" }.joined(separator: ", ") + "}"))
        }
        if let resultInode { members.append(("result_inode", "\(resultInode)")) }
        if let errorRecord { members.append(("error_record", TaskRecord.embedded(errorRecord))) }
        if errorRecordOwed { members.append(("error_record_owed", "true")) }
        members.sort { $0.0 < $1.0 }
        let body = members.map { "  \(JSONText.quoted($0.0)) : \($0.1)" }.joined(separator: ",\n")
        return Array("{\n\(body)\n}\n".utf8)
    }

    /// An error record as JSON inside the task record; bytes that are not JSON as a string.
    static func embedded(_ bytes: [UInt8]) -> String {
        var end = bytes.count
        while end > 0, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[end - 1]) { end -= 1 }
        let trimmed = Array(bytes[..<end])
        if RawJSON.valueIfJSON(trimmed) != nil { return String(decoding: trimmed, as: UTF8.self) }
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
        if let requestID = attempt.providerRequestID { members.append(("request_id", JSONText.quoted(requestID))) }
        if let batch = attempt.remoteBatch {
            members.append(("lane", JSONText.quoted("batch")))
            members.append(("remote_batch", JSONText.quoted(batch)))
        }
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
            request = FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modified,
                                   bornNanoseconds: (identity["btime_ns"] as? NSNumber)?.int64Value,
                                   contentHash: (identity["fnv1a"] as? String).flatMap { UInt64($0, radix: 16) })
        }
        let attempts = (object["attempts"] as? [Any] ?? []).compactMap { ($0 as? [String: Any]).flatMap(decodeAttempt) }
        let history = TaskHistory(firstSeen: firstSeen, attempts: attempts,
                                  notBefore: (object["next_attempt_at"] as? String).flatMap(Timestamp.date),
                                  // Numbers from a file: bounded before anything indexes or counts with them.
                                  preferredEndpoint: min(max(0, object["preferred_endpoint"] as? Int ?? 0), 1 << 20),
                                  unfinishedStarts: min(max(0, object["unfinished_starts"] as? Int ?? 0), CrashGuard.limit))
        var errorRecord: [UInt8]?
        if let embedded = object["error_record"] {
            errorRecord = JSONObject.encode(embedded)
        }
        var record = TaskRecord(id: id, status: status, request: request, history: history,
                                endpoint: object["endpoint"] as? String, usage: object["usage"] as? [String: Int],
                                resultInode: (object["result_inode"] as? NSNumber)?.uint64Value, errorRecord: errorRecord)
        record.dialect = object["dialect"] as? String
        record.errorRecordOwed = object["error_record_owed"] as? Bool ?? false
        return record
    }

    /// The record of `id`, or nil when there is none or it cannot be read (then the task
    /// simply starts afresh).
    public static func load(_ layout: SpoolLayout, id: String) -> TaskRecord? {
        // No record, or one that cannot be read: the task starts afresh, as documented above.
        guard let bytes = try? FileReader.prefix(path: layout.taskRecord(id), limit: 16 << 20) else { return nil }
        return decode(bytes)
    }

    /// What looking for a record found.
    public enum Lookup: Sendable {
        case none
        case found(TaskRecord)
        /// There, but not readable as a record: on a network filesystem, possibly one just
        /// replaced and seen through a stale cache (a truncated or vanished copy).
        case unreadable(String)
    }

    /// The record of `id`, telling an absent record from one that cannot be read: a claim
    /// on a shared spool must not take the second for the first.
    public static func lookUp(_ layout: SpoolLayout, id: String) -> Lookup {
        let path = layout.taskRecord(id)
        let bytes: [UInt8]
        do {
            // A FIFO put in its place must not block the reader.
            bytes = try FileReader.prefix(path: path, limit: 16 << 20)
        } catch let error as SystemError where error.errno == ENOENT {
            return .none
        } catch {
            return .unreadable("\(error)")
        }
        guard let record = decode(bytes) else { return .unreadable("\(path): not a task record (\(bytes.count) bytes)") }
        return .found(record)
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
        if let requestID = attempt.providerRequestID { entry["request_id"] = requestID }
        if let batch = attempt.remoteBatch {
            entry["lane"] = "batch"
            entry["remote_batch"] = batch
        }
        return entry
    }

    static func decodeAttempt(_ entry: [String: Any]) -> AttemptEntry? {
        guard let started = (entry["started_at"] as? String).flatMap(Timestamp.date),
              let ended = (entry["ended_at"] as? String).flatMap(Timestamp.date),
              let endpoint = entry["endpoint"] as? String, let outcome = entry["outcome"] as? String else { return nil }
        var attempt = AttemptEntry(startedAt: started, endedAt: ended, endpoint: endpoint, outcome: outcome,
                                   message: entry["message"] as? String, httpStatus: entry["http_status"] as? Int,
                                   timer: entry["timer"] as? String,
                                   bytesSent: (entry["bytes_sent"] as? NSNumber)?.int64Value ?? 0,
                                   bytesReceived: (entry["bytes_received"] as? NSNumber)?.int64Value ?? 0)
        attempt.remoteBatch = entry["remote_batch"] as? String
        attempt.providerRequestID = entry["request_id"] as? String
        return attempt
    }
}
