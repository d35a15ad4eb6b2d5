/// Reads the answers of OpenAI's Files and Batches API into what the lane needs: a file's
/// or a batch's id, a batch's status and counts, a page of the list. Numbers come from the
/// network: each is read only when it fits, never trapped on. Pure.
public enum OpenAIBatchAnswers {
    /// Why an answer cannot be read, for the log and the group's retry.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The `id` of a File or Batch object.
    public static func id(_ bytes: [UInt8]) throws(Problem) -> String {
        let root = try object(bytes)
        guard let id = root["id"].flatMap({ RawJSON.string($0, in: bytes) }), !id.isEmpty else {
            throw Problem(description: "the answer has no id")
        }
        return id
    }

    /// A Batch object's status, counts and file ids.
    public static func status(_ bytes: [UInt8]) throws(Problem) -> RemoteBatchStatus {
        let root = try object(bytes)
        guard let status = root["status"].flatMap({ RawJSON.string($0, in: bytes) }) else {
            throw Problem(description: "the batch has no status")
        }
        let counts = root["request_counts"]
        return RemoteBatchStatus(status: status, total: BatchAnswerJSON.count(counts?["total"], bytes),
                                 completed: BatchAnswerJSON.count(counts?["completed"], bytes), failed: BatchAnswerJSON.count(counts?["failed"], bytes),
                                 outputFileID: root["output_file_id"].flatMap { RawJSON.string($0, in: bytes) },
                                 errorFileID: root["error_file_id"].flatMap { RawJSON.string($0, in: bytes) })
    }

    /// One page of `GET /v1/batches`.
    public static func listing(_ bytes: [UInt8]) throws(Problem) -> RemoteBatchListing {
        let root = try object(bytes)
        guard case .array(let items, _)? = root["data"] else { throw Problem(description: "the list has no data array") }
        var entries: [RemoteBatchListing.Entry] = []
        for item in items {
            guard let id = item["id"].flatMap({ RawJSON.string($0, in: bytes) }) else { continue }
            entries.append(RemoteBatchListing.Entry(id: id, group: item["metadata"]?[RemoteBatchListing.groupKey].flatMap { RawJSON.string($0, in: bytes) },
                                                    createdAt: integer(item["created_at"], bytes) ?? 0))
        }
        var hasMore = false
        if case .bool(let flag, _)? = root["has_more"] { hasMore = flag }
        return RemoteBatchListing(entries: entries, hasMore: hasMore)
    }

    /// The body of `POST /v1/batches`: the group's id in `metadata`, the only guard against
    /// a second create, since the API takes no idempotency key.
    public static func createBody(inputFileID: String, url: String, group: String, window: String = LaneRouter.deferredWindow) -> [UInt8] {
        JSONWriter.object([
            ("input_file_id", JSONWriter.quoted(inputFileID)),
            ("endpoint", JSONWriter.quoted(url)),
            ("completion_window", JSONWriter.quoted(window)),
            ("metadata", JSONWriter.object([(RemoteBatchListing.groupKey, JSONWriter.quoted(group))])),
        ])
    }

    /// The provider's error message in an error answer, when it has one.
    public static func errorMessage(_ bytes: [UInt8]) -> String? {
        ProviderError.objectMessage(inBody: bytes)
    }

    private static func object(_ bytes: [UInt8]) throws(Problem) -> RawJSON.Value {
        do {
            return try BatchAnswerJSON.object(bytes)
        } catch {
            throw Problem(description: "the answer is \(error)")
        }
    }

    private static func integer(_ value: RawJSON.Value?, _ bytes: [UInt8]) -> Int? {
        BatchAnswerJSON.integer(value, bytes)
    }
}
