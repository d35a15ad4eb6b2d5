import LLMSpoolCore
import Foundation
import Synchronization

/// The stub's OpenAI Files and Batches API: `POST /v1/files` (multipart, `purpose=batch`),
/// `GET /v1/files/{id}`, `GET /v1/files/{id}/content`, `POST /v1/batches`,
/// `GET /v1/batches/{id}`, `GET /v1/batches?limit=&after=`, `POST /v1/batches/{id}/cancel`.
/// A batch ends `StubBatchOptions.seconds` after its creation; then each input line is
/// answered as the live stub answers it, 2xx answers into the output file and others into
/// the error file, unless the line's `"stub"` object says `"batch_line"`: `expire` (an
/// error line with OpenAI's `batch_expired`), `fail` (an error line without a response) or
/// `omit` (no line). With `StubBatchOptions.ending` `expired`, batches end `expired`. The
/// downloads of a batch's output and error files meet the download faults, its retrieves the
/// poll faults. It counts
/// creations and output downloads per `metadata.llmspool_group` and lists the groups whose
/// batch was cancelled (`counts`, served at `GET /stub/batches`), so tests can prove that
/// no group was created twice. Files are
/// kept in memory: it is for tests, not for 200 MB inputs.
final class StubBatches: Sendable {
    struct File {
        var id: String
        var filename: String
        var purpose: String
        var bytes: [UInt8]
        var createdAt: Int
    }

    struct Batch {
        var id: String
        var inputFileID: String
        var endpoint: String
        var window: String
        var metadata: [String: String]
        var createdAt: Int
        var endsAt: Double
        var cancelledAt: Int?
        var completedAt: Int?
        var expiredAt: Int?
        /// Set when the batch ended `failed` (`--batch-ending failed`): no line ran.
        var failedAt: Int?
        var outputFileID: String?
        var errorFileID: String?
        var total = 0
        var completed = 0
        var failed = 0
    }

    struct State {
        var files: [String: File] = [:]
        /// Oldest first; listed newest first.
        var batches: [Batch] = []
        var creations: [String: Int] = [:]
        var downloads: [String: Int] = [:]
        var trickled = 0
        var uploadFaults: [StubBatchOptions.Fault]
        var createFaults: [StubBatchOptions.Fault]
        var pollFaults: [StubBatchOptions.Fault]
        var downloadFaults: [StubBatchOptions.Fault]
        var next = 0

        mutating func id(_ prefix: String) -> String {
            next += 1
            return "\(prefix)\(String(format: "%06d", next))"
        }
    }

    private let state: Mutex<State>
    private let options: StubBatchOptions
    private let responder: StubResponder

    init(options: StubBatchOptions, responder: StubResponder) {
        self.options = options
        self.responder = responder
        state = Mutex(State(uploadFaults: options.uploadFaults, createFaults: options.createFaults, pollFaults: options.pollFaults,
                            downloadFaults: options.downloadFaults))
    }

    /// The groups created (with their counts), the groups whose batch was cancelled, and
    /// the output downloads per group.
    var counts: StubBatchCounts {
        state.withLock { state in
            StubBatchCounts(creations: state.creations,
                            cancelled: state.batches.filter { $0.cancelledAt != nil }.compactMap { $0.metadata[RemoteBatchListing.groupKey] },
                            downloads: state.downloads, trickled: state.trickled)
        }
    }

    /// The answer to a Files or Batches request, or nil when `path` is not one.
    func respond(method: String, path: String, query: [String: String], body: [UInt8], headers: [String: String]) -> StubResponder.Response? {
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count >= 2, parts[0] == "v1", parts[1] == "files" || parts[1] == "batches" else { return nil }
        switch (method, parts[1], parts.count) {
        case ("POST", "files", 2): return upload(body, headers: headers)
        case ("GET", "files", 3): return file(parts[2])
        case ("GET", "files", 4) where parts[3] == "content": return content(parts[2])
        case ("POST", "batches", 2): return create(body, headers: headers)
        case ("GET", "batches", 2): return list(query)
        case ("GET", "batches", 3): return retrieve(parts[2], headers: headers)
        case ("POST", "batches", 4) where parts[3] == "cancel": return cancel(parts[2])
        default: return Self.error(404, "no route for \(method) \(path)")
        }
    }

    private func upload(_ body: [UInt8], headers: [String: String]) -> StubResponder.Response {
        switch state.withLock({ StubCreateFaults.next(&$0.uploadFaults) }) {
        case .status(let status)?: return Self.error(status, "stub answered \(status) to the upload as asked")
        case .echoKey?: return Self.error(401, StubResponder.keyEcho(headers))
        case .lost?, .cut?, .trickle?, nil: break
        }
        guard let parts = StubMultipart.parse(body) else { return Self.error(400, "the body is not multipart/form-data") }
        guard let purpose = parts.first(where: { $0.name == "purpose" }).map({ String(decoding: $0.content, as: UTF8.self) }),
              purpose == "batch" else { return Self.error(400, "purpose must be batch") }
        guard let part = parts.first(where: { $0.name == "file" }) else { return Self.error(400, "no file part") }
        let file = state.withLock { state -> File in
            let file = File(id: state.id("file-"), filename: part.filename ?? "input.jsonl", purpose: purpose,
                            bytes: Array(part.content), createdAt: Self.now())
            state.files[file.id] = file
            return file
        }
        return Self.ok(Self.object(file))
    }

    private func file(_ id: String) -> StubResponder.Response {
        guard let file = state.withLock({ $0.files[id] }) else { return Self.error(404, "no file \(id)") }
        return Self.ok(Self.object(file))
    }

    private func content(_ id: String) -> StubResponder.Response {
        state.withLock { state in
            guard let file = state.files[id] else { return Self.error(404, "no file \(id)") }
            // A batch's output or error file meets the download faults; an input file does not.
            guard let batch = state.batches.first(where: { $0.outputFileID == id || $0.errorFileID == id }) else {
                return StubResponder.Response(status: 200, headers: [("Content-Type", "application/octet-stream")], latencyMs: 0,
                                              pieces: [.init(bytes: file.bytes, delayMs: 0)])
            }
            if let group = batch.metadata[RemoteBatchListing.groupKey] { state.downloads[group, default: 0] += 1 }
            return StubDownloadFaults.answer(file.bytes, contentType: "application/octet-stream", faults: &state.downloadFaults)
        }
    }

    private func create(_ body: [UInt8], headers: [String: String]) -> StubResponder.Response {
        guard let request = JSONObject.parse(body) else { return Self.error(400, "the body is not a JSON object") }
        guard let input = request["input_file_id"] as? String, let endpoint = request["endpoint"] as? String,
              let window = request["completion_window"] as? String else {
            return Self.error(400, "input_file_id, endpoint and completion_window are required")
        }
        guard window == "24h" else { return Self.error(400, "completion_window must be 24h") }
        let metadata = (request["metadata"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        let seconds = metadata["stub_seconds"].flatMap(Double.init) ?? options.seconds
        let outcome = state.withLock { state -> (batch: Batch?, lost: Bool, refusal: StubResponder.Response?) in
            let fault = StubCreateFaults.next(&state.createFaults)
            if case .status(let status)? = fault {
                return (nil, false, Self.error(status, "stub answered \(status) to the create as asked"))
            }
            if fault == .echoKey { return (nil, false, Self.error(401, StubResponder.keyEcho(headers))) }
            guard let file = state.files[input], file.purpose == "batch" else {
                return (nil, false, Self.error(400, "no batch file \(input)"))
            }
            var batch = Batch(id: state.id("batch_"), inputFileID: input, endpoint: endpoint, window: window, metadata: metadata,
                              createdAt: Self.now(), endsAt: Date().timeIntervalSince1970 + max(0, seconds))
            batch.total = file.bytes.split(separator: 0x0A).filter { !$0.allSatisfy { $0 == 0x20 || $0 == 0x0D } }.count
            state.batches.append(batch)
            if let group = metadata[RemoteBatchListing.groupKey] { state.creations[group, default: 0] += 1 }
            return (batch, fault == .lost, nil)
        }
        guard let batch = outcome.batch else { return outcome.refusal ?? Self.error(500, "no batch") }
        return StubCreateFaults.answer(Self.ok(Self.object(batch)), lost: outcome.lost)
    }

    private func retrieve(_ id: String, headers: [String: String]) -> StubResponder.Response {
        let fault = state.withLock { state in
            let fault = StubCreateFaults.next(&state.pollFaults)
            if fault == .trickle { state.trickled += 1 }
            return fault
        }
        if fault == .echoKey { return Self.error(401, StubResponder.keyEcho(headers)) }
        if case .status(let status)? = fault { return Self.error(status, "stub answered \(status) to the poll as asked") }
        guard let batch = settled(id) else { return Self.error(404, "no batch \(id)") }
        return fault == .trickle ? StubCreateFaults.trickled(Self.ok(Self.object(batch))) : Self.ok(Self.object(batch))
    }

    private func list(_ query: [String: String]) -> StubResponder.Response {
        let limit = min(max(query["limit"].flatMap { Int($0) } ?? 20, 1), 100)
        let ids = state.withLock { $0.batches.reversed().map(\.id) }
        var start = 0
        if let after = query["after"] {
            guard let index = ids.firstIndex(of: after) else { return Self.error(400, "no batch \(after)") }
            start = index + 1
        }
        let page = ids[start..<min(ids.count, start + limit)].compactMap(settled)
        let data: [[String: Any]] = page.map { Self.object($0) }
        let first: Any = page.first?.id ?? NSNull()
        let last: Any = page.last?.id ?? NSNull()
        let listing: [String: Any] = ["object": "list", "data": data, "first_id": first, "last_id": last,
                                      "has_more": start + limit < ids.count]
        return Self.ok(listing)
    }

    private func cancel(_ id: String) -> StubResponder.Response {
        let batch = state.withLock { state -> Batch? in
            guard let index = state.batches.firstIndex(where: { $0.id == id }) else { return nil }
            if state.batches[index].completedAt == nil && state.batches[index].expiredAt == nil && state.batches[index].cancelledAt == nil
                && state.batches[index].failedAt == nil {
                state.batches[index].cancelledAt = Self.now()
            }
            return state.batches[index]
        }
        guard let batch else { return Self.error(404, "no batch \(id)") }
        return Self.ok(Self.object(batch))
    }

    /// The batch as it is now: one whose time has come is run, once, under the lock, so two
    /// polls at once never answer it twice.
    private func settled(_ id: String) -> Batch? {
        state.withLock { state -> Batch? in
            guard let index = state.batches.firstIndex(where: { $0.id == id }) else { return nil }
            var batch = state.batches[index]
            guard batch.completedAt == nil, batch.expiredAt == nil, batch.cancelledAt == nil, batch.failedAt == nil,
                  Date().timeIntervalSince1970 >= batch.endsAt else { return batch }
            // OpenAI fails a batch whose input it refuses as a whole: no line runs, and there
            // is neither an output nor an error file, only the batch's `errors`.
            if options.ending == "failed" {
                batch.failedAt = Self.now()
                state.batches[index] = batch
                return batch
            }
            var output: [UInt8] = []
            var errors: [UInt8] = []
            let input = state.files[batch.inputFileID]?.bytes ?? []
            for line in input.split(separator: 0x0A) where !line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) {
                guard let entry = answer(Array(line), requestID: state.id("req_"), lineID: state.id("batch_req_")) else { continue }
                if entry.succeeded {
                    output += entry.line + [0x0A]
                    batch.completed += 1
                } else {
                    errors += entry.line + [0x0A]
                    batch.failed += 1
                }
            }
            let now = Self.now()
            if !output.isEmpty {
                let file = File(id: state.id("file-"), filename: "batch_output.jsonl", purpose: "batch_output", bytes: output, createdAt: now)
                state.files[file.id] = file
                batch.outputFileID = file.id
            }
            if !errors.isEmpty {
                let file = File(id: state.id("file-"), filename: "batch_errors.jsonl", purpose: "batch_output", bytes: errors, createdAt: now)
                state.files[file.id] = file
                batch.errorFileID = file.id
            }
            if options.ending == "expired" { batch.expiredAt = now } else { batch.completedAt = now }
            state.batches[index] = batch
            return batch
        }
    }

    /// One input line answered as the live stub answers its body, or as its `batch_line`
    /// directive says; nil for a line to leave out.
    private func answer(_ line: [UInt8], requestID: String, lineID: String) -> (line: [UInt8], succeeded: Bool)? {
        guard let object = JSONObject.parse(line), let customID = object["custom_id"] as? String,
              let url = object["url"] as? String, let body = object["body"] else {
            return (Self.json(["id": lineID, "custom_id": NSNull(), "response": NSNull(),
                               "error": ["code": "invalid_request", "message": "the line is not a batch request"]]), false)
        }
        switch ((body as? [String: Any])?["stub"] as? [String: Any])?["batch_line"] as? String {
        case "omit"?:
            return nil
        case "expire"?:
            return (Self.json(["id": lineID, "custom_id": customID, "response": NSNull(),
                               "error": ["code": "batch_expired", "message": "This request could not be executed before the completion window expired."]]), false)
        case "fail"?:
            return (Self.json(["id": lineID, "custom_id": customID, "response": NSNull(),
                               "error": ["code": "server_error", "message": "the stub failed this line as asked"]]), false)
        default:
            break
        }
        let response = responder.respond(method: "POST", path: url, body: JSONObject.encode(body))
        let answer: Any = JSONObject.parse(response.body) ?? String(decoding: response.body, as: UTF8.self)
        let succeeded = (200..<300).contains(response.status)
        return (Self.json(["id": lineID, "custom_id": customID, "error": NSNull(),
                           "response": ["status_code": response.status, "request_id": requestID, "body": answer]]), succeeded)
    }

    private static func object(_ file: File) -> [String: Any] {
        ["id": file.id, "object": "file", "bytes": file.bytes.count, "created_at": file.createdAt, "filename": file.filename,
         "purpose": file.purpose, "status": "processed"]
    }

    private static func object(_ batch: Batch) -> [String: Any] {
        let status = batch.cancelledAt != nil ? "cancelled" : batch.completedAt != nil ? "completed" : batch.expiredAt != nil ? "expired"
            : batch.failedAt != nil ? "failed" : "in_progress"
        let errors: Any = batch.failedAt == nil ? NSNull()
            : ["object": "list", "data": [["code": "invalid_request", "message": "the stub failed this batch as asked", "param": NSNull(), "line": NSNull()]]]
        func time(_ value: Int?) -> Any { value ?? NSNull() }
        return ["id": batch.id, "object": "batch", "endpoint": batch.endpoint, "errors": errors, "input_file_id": batch.inputFileID,
                "completion_window": batch.window, "status": status,
                "output_file_id": batch.outputFileID ?? NSNull(), "error_file_id": batch.errorFileID ?? NSNull(),
                "created_at": batch.createdAt, "in_progress_at": batch.createdAt, "expires_at": batch.createdAt + 86_400,
                "finalizing_at": time(batch.completedAt), "completed_at": time(batch.completedAt), "failed_at": time(batch.failedAt),
                "expired_at": time(batch.expiredAt), "cancelling_at": time(batch.cancelledAt), "cancelled_at": time(batch.cancelledAt),
                "request_counts": ["total": batch.total, "completed": batch.completed, "failed": batch.failed],
                "metadata": batch.metadata.isEmpty ? NSNull() : batch.metadata]
    }

    private static func now() -> Int { Int(Date().timeIntervalSince1970) }

    private static func json(_ object: Any) -> [UInt8] { StubResponder.json(object) }

    private static func ok(_ object: Any) -> StubResponder.Response {
        StubResponder.Response(status: 200, headers: [("Content-Type", "application/json")], latencyMs: 0,
                               pieces: [.init(bytes: json(object), delayMs: 0)])
    }

    private static func error(_ status: Int, _ message: String) -> StubResponder.Response {
        ok(["error": ["message": message, "type": "stub_error", "code": status]]).with(status: status)
    }
}

extension StubResponder.Response {
    func with(status: Int) -> Self {
        var copy = self
        copy.status = status
        return copy
    }
}
