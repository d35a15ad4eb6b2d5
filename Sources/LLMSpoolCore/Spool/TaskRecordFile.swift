import Foundation
import Glibc

/// Reading and writing `state/<id>.json`.
extension TaskRecord {
    /// Written by hand, keys in sorted order: a record is written for every outcome, and
    /// Foundation's encoder (bridging, locale-aware key sorting) was most of the
    /// finisher's CPU time; then the members built as strings, sorted and joined were 4%
    /// of a small request's (`TaskRecordBytesTests` holds the layout).
    public func encoded() -> [UInt8] {
        var object = JSONObjectBytes(open: "{\n  ", separator: ",\n  ", colon: " : ", capacity: 512 + 256 * history.attempts.count)
        // The keys in byte order, each written where it sorts.
        object.key("attempts")
        object.append([0x5B])
        for (index, attempt) in history.attempts.enumerated() {
            if index > 0 { object.append([0x2C, 0x20]) }
            object.append(TaskRecord.encodedAttempt(attempt))
        }
        object.append([0x5D])
        if let dialect { object.string("dialect", dialect) }
        if let endpoint { object.string("endpoint", endpoint) }
        if let errorRecord { object.raw("error_record", TaskRecord.embedded(errorRecord).utf8) }
        if errorRecordOwed { object.raw("error_record_owed", "true".utf8) }
        object.key("first_seen")
        Timestamp.appendQuoted(history.firstSeen, to: &object.bytes)
        object.string("id", id)
        if let notBefore = history.notBefore {
            object.key("next_attempt_at")
            Timestamp.appendQuoted(notBefore, to: &object.bytes)
        }
        object.integer("preferred_endpoint", history.preferredEndpoint)
        if let request {
            var fields = JSONObjectBytes(open: "{", separator: ", ", colon: ": ", capacity: 128)
            if let born = request.bornNanoseconds { fields.integer("btime_ns", born) }
            fields.integer("device", request.device)
            fields.integer("inode", request.inode)
            fields.integer("mtime_ns", request.modifiedNanoseconds)
            fields.integer("size", request.size)
            // After `size`, out of order, as records have always had it.
            if let hash = request.contentHash { fields.raw("fnv1a", "\"\(String(hash, radix: 16))\"".utf8) }
            object.raw("request", fields.closed("}"))
        }
        if let resultInode { object.integer("result_inode", resultInode) }
        object.string("status", status.rawValue)
        if history.unfinishedStarts > 0 { object.integer("unfinished_starts", history.unfinishedStarts) }
        object.key("updated_at")
        Timestamp.appendQuoted(Date(), to: &object.bytes)
        if let usage {
            var counts = JSONObjectBytes(open: "{", separator: ", ", colon: ": ", capacity: 96)
            for key in usage.keys.sorted() { counts.integer(key, usage[key]!) }
            object.raw("usage", counts.closed("}"))
        }
        return object.closed("\n}\n")
    }

    /// An error record as JSON inside the task record; bytes that are not JSON as a string.
    static func embedded(_ bytes: [UInt8]) -> String {
        var end = bytes.count
        while end > 0, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[end - 1]) { end -= 1 }
        let trimmed = Array(bytes[..<end])
        if RawJSON.valueIfJSON(trimmed) != nil { return String(decoding: trimmed, as: UTF8.self) }
        return JSONText.quoted(String(decoding: bytes, as: UTF8.self))
    }

    /// One attempt, on one line, keys in byte order.
    static func encodedAttempt(_ attempt: AttemptEntry) -> [UInt8] {
        var object = JSONObjectBytes(open: "{", separator: ", ", colon: ": ", capacity: 256)
        object.integer("bytes_received", attempt.bytesReceived)
        object.integer("bytes_sent", attempt.bytesSent)
        object.key("ended_at")
        Timestamp.appendQuoted(attempt.endedAt, to: &object.bytes)
        object.string("endpoint", attempt.endpoint)
        if let status = attempt.httpStatus { object.integer("http_status", status) }
        if attempt.remoteBatch != nil { object.string("lane", "batch") }
        if let message = attempt.message { object.string("message", message) }
        object.string("outcome", attempt.outcome)
        if let batch = attempt.remoteBatch { object.string("remote_batch", batch) }
        if let requestID = attempt.providerRequestID { object.string("request_id", requestID) }
        object.key("started_at")
        Timestamp.appendQuoted(attempt.startedAt, to: &object.bytes)
        if let timer = attempt.timer { object.string("timer", timer) }
        return object.closed("}")
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
