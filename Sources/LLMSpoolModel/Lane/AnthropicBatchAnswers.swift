import FoundationEssentials

/// Anthropic's Message Batches API as the lane reads it: the create's body framing, a `message_batch` object as a `RemoteBatchStatus`, and one
/// line of the results JSONL as the outcome of the member its `custom_id` names. The
/// custom_ids carry the group id (`<group>-<index>`), since a Message Batch has no
/// metadata: reconciling after a crash can tell a batch is the group's only from its
/// results. Numbers come from the network: each is read only when it fits. Pure.
public enum AnthropicBatchAnswers {
    /// Why an answer cannot be read, for the log and the group's retry.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    // MARK: custom ids

    /// The custom_id of the member at `index` of `group`: Anthropic takes `[A-Za-z0-9_-]{1,64}`,
    /// which a member's own id (a file name) need not be.
    public static func customID(group: String, index: Int) -> String { "\(group)-\(index)" }

    /// The member index a custom_id names when it is one of `group`'s; nil otherwise.
    public static func memberIndex(customID: String, group: String) -> Int? {
        let prefix = group + "-"
        guard customID.hasPrefix(prefix) else { return nil }
        let digits = customID.dropFirst(prefix.count)
        guard !digits.isEmpty, digits.count <= 9, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              !(digits.count > 1 && digits.first == "0") else { return nil }
        return Int(digits)
    }

    /// The group a custom_id of ours names: all before its last `-`; nil when it has none.
    public static func group(ofCustomID customID: String) -> String? {
        guard let dash = customID.lastIndex(of: "-"), dash > customID.startIndex else { return nil }
        return String(customID[..<dash])
    }

    // MARK: the create

    /// The body of `POST /v1/messages/batches` starts with this…
    public static let head: [UInt8] = Array(#"{"requests":["#.utf8)
    /// …then each member as `memberPrefix` + its Messages body + `memberSuffix`, separated by commas…
    public static func memberPrefix(customID: String, first: Bool) -> [UInt8] {
        (first ? [] : [0x2C]) + Array(#"{"custom_id":"#.utf8) + JSONWriter.quoted(customID) + Array(#","params":"#.utf8)
    }
    public static let memberSuffix: [UInt8] = [0x7D]
    /// …and ends with this.
    public static let tail: [UInt8] = Array("]}".utf8)

    // MARK: answers

    /// A `message_batch` object: `processing_status` `in_progress`, `canceling` or `ended`,
    /// read as the lane's status words (`ended` is `cancelled` when a cancel was initiated,
    /// `expired` when requests expired, else `completed`); `results_url` stands for the
    /// output file, the one thing to download.
    public static func status(_ bytes: [UInt8]) throws(Problem) -> RemoteBatchStatus {
        let root = try object(bytes)
        guard let processing = root["processing_status"].flatMap({ RawJSON.string($0, in: bytes) }) else {
            throw Problem(description: "the message batch has no processing_status")
        }
        let counts = root["request_counts"]
        func count(_ key: String) -> Int { BatchAnswerJSON.count(counts?[key], bytes) }
        let (succeeded, errored, canceled, expired) = (count("succeeded"), count("errored"), count("canceled"), count("expired"))
        let unfinished = [errored, canceled, expired].reduce(0) { TokenCount.sum($0, $1) }
        let total = [count("processing"), succeeded, unfinished].reduce(0) { TokenCount.sum($0, $1) }
        let word: String
        switch processing {
        case "ended":
            let cancelled = root["cancel_initiated_at"].map { !$0.isNull } ?? false
            word = cancelled ? "cancelled" : expired > 0 ? "expired" : "completed"
        case "canceling":
            word = "cancelling"
        default:
            word = processing
        }
        return RemoteBatchStatus(status: word, total: total, completed: succeeded, failed: unfinished,
                                 outputFileID: processing == "ended" ? root["results_url"].flatMap { RawJSON.string($0, in: bytes) } : nil)
    }

    /// One page of `GET /v1/messages/batches`, newest first. A Message Batch has no metadata,
    /// so every entry's group is unknown: only its results' custom_ids can tell, once it has
    /// ended; its size (the sum of its `request_counts`, saturated) says which cannot be the
    /// group's. A `created_at` that is not an RFC 3339 time reads as 0, which ends the paging
    /// early rather than late.
    public static func listing(_ bytes: [UInt8]) throws(Problem) -> RemoteBatchListing {
        let root = try object(bytes)
        guard case .array(let items, _)? = root["data"] else { throw Problem(description: "the list has no data array") }
        var entries: [RemoteBatchListing.Entry] = []
        for item in items {
            guard let id = item["id"].flatMap({ RawJSON.string($0, in: bytes) }) else { continue }
            let created = item["created_at"].flatMap { RawJSON.string($0, in: bytes) }.flatMap(RFC3339Date.parse)
            let seconds = created.map(\.timeIntervalSince1970).flatMap { $0.isFinite && abs($0) < 1e15 ? Int($0) : nil } ?? 0
            let counts = item["request_counts"]
            let sizes = ["processing", "succeeded", "errored", "canceled", "expired"].map { integer(counts?[$0], bytes) }
            // Counts that are missing or not whole numbers say nothing about the size.
            let total = sizes.contains(where: { $0 == nil || $0! < 0 }) ? nil : sizes.reduce(0) { TokenCount.sum($0, $1!) }
            let ended = item["processing_status"].flatMap { RawJSON.string($0, in: bytes) } == "ended"
            entries.append(RemoteBatchListing.Entry(id: id, group: nil, createdAt: seconds, total: total, ended: ended))
        }
        var hasMore = false
        if case .bool(let flag, _)? = root["has_more"] { hasMore = flag }
        return RemoteBatchListing(entries: entries, hasMore: hasMore)
    }

    /// The `id` of a created `message_batch`.
    public static func id(_ bytes: [UInt8]) throws(Problem) -> String {
        guard let id = try object(bytes)["id"].flatMap({ RawJSON.string($0, in: bytes) }), !id.isEmpty else {
            throw Problem(description: "the message batch has no id")
        }
        return id
    }

    /// The error message of an Anthropic error answer (`{"type":"error","error":{"message"}}`).
    public static func errorMessage(_ bytes: [UInt8]) -> String? {
        ProviderError.objectMessage(inBody: bytes)
    }

    /// The HTTP status a live call would have answered for an `errored` result's error
    /// type, so that the usual retry rules judge it (an invalid request is not retried,
    /// an overloaded API is). The live lane's table (`MessagesDialect`) is the one table,
    /// so a line of a batch and a live call with the same error are judged alike (a
    /// `timeout_error` is a 504 in both); a type it does not know is a server error.
    public static func status(ofErrorType type: String) -> Int {
        MessagesDialect.status(ofErrorType: type) ?? 500
    }

    /// One line of the results: `{"custom_id", "result": {"type": "succeeded", "message"}}`,
    /// or `errored` with the error body, `canceled`, `expired`.
    public static func resultLine(_ line: [UInt8]) throws(Problem) -> (customID: String, result: BatchLineResult) {
        let root = try object(line)
        guard let customID = root["custom_id"].flatMap({ RawJSON.string($0, in: line) }) else { throw Problem(description: "no custom_id") }
        guard let result = root["result"], let type = result["type"].flatMap({ RawJSON.string($0, in: line) }) else {
            throw Problem(description: "\(customID): no result type")
        }
        switch type {
        case "succeeded":
            guard let message = result["message"], case .object = message else { throw Problem(description: "\(customID): a success without a message") }
            return (customID, .succeeded(status: 200, requestID: nil, body: Array(line[message.range])))
        case "errored":
            let error = result["error"]
            let errorType = error?["error"]?["type"].flatMap { RawJSON.string($0, in: line) } ?? "api_error"
            let message = error?["error"]?["message"].flatMap { RawJSON.string($0, in: line) } ?? "the message batch reported an error"
            return (customID, .failed(code: errorType, message: message, status: status(ofErrorType: errorType), body: error.map { Array(line[$0.range]) }))
        case "canceled":
            return (customID, .cancelled)
        case "expired":
            return (customID, .expired)
        default:
            throw Problem(description: "\(customID): an unknown result type \"\(TextEscaping.trimmed(type.prefix(40)))\"")
        }
    }

    /// The group the first line of a batch's results names (its custom_id's prefix), which
    /// tells whether a listed batch is the group's; nil when the line names none.
    public static func group(ofFirstResultLine line: [UInt8]) -> String? {
        guard let root = try? RawJSON.parse(line), case .object = root,
              let customID = root["custom_id"].flatMap({ RawJSON.string($0, in: line) }) else { return nil }
        return group(ofCustomID: customID)
    }

    /// One results line as the outcome of the member it names: `members` are the group's
    /// member ids in the order of the create, which the custom_id's index points into. A line
    /// of another group, or one naming no member, is refused with what it names.
    public static func memberLine(_ line: [UInt8], group: String, members: [String]) throws(Problem) -> (member: String, result: BatchLineResult) {
        let read = try resultLine(line)
        guard let index = memberIndex(customID: read.customID, group: group) else {
            let other = self.group(ofCustomID: read.customID).map { " (of group \(TextEscaping.trimmed($0.prefix(64))))" } ?? ""
            throw Problem(description: "the custom_id \"\(TextEscaping.trimmed(read.customID.prefix(80)))\"\(other) is not one of group \(group)'s")
        }
        guard index < members.count else {
            throw Problem(description: "the custom_id \(read.customID) names no member: the group has \(members.count)")
        }
        return (members[index], read.result)
    }

    private static func object(_ bytes: [UInt8]) throws(Problem) -> RawJSON.Value {
        do {
            return try BatchAnswerJSON.object(bytes)
        } catch {
            throw Problem(description: error.description)
        }
    }

    private static func integer(_ value: RawJSON.Value?, _ bytes: [UInt8]) -> Int? {
        BatchAnswerJSON.integer(value, bytes)
    }
}
