import LLMSpoolCore
import Foundation
import Synchronization

/// The stub's Anthropic Message Batches API: `POST /v1/messages/batches`
/// (`{"requests":[{custom_id, params}]}`), `GET /v1/messages/batches/{id}`,
/// `GET /v1/messages/batches?limit=&after_id=&before_id=`, `POST .../{id}/cancel` and
/// `GET .../{id}/results` (JSONL at the batch's `results_url`). Every call must carry an
/// `x-api-key` (and no `Authorization`) and an `anthropic-version`. A batch ends
/// `StubBatchOptions.seconds` after its creation; then each request's params are answered
/// as the live stub answers `POST /v1/messages`, unless its `"stub"` object says
/// `"batch_line"`: `expire`, `fail` (an `api_error`) or `omit` (no line). With
/// `StubBatchOptions.ending` `expired`, the requests not directed otherwise expire. A
/// cancel answers `canceling`; the batch has ended by the next look, its unanswered
/// requests `canceled`. It meets the create, poll and download faults in its own order (a
/// poll is a retrieve, a download a results fetch), and counts creations and results fetches per group id:
/// the custom_ids' prefix before their last `-`.
final class StubMessageBatches: Sendable {
    struct Batch {
        var id: String
        /// (custom_id, params as sent)
        var requests: [(String, [UInt8])]
        var headers: [String: String]
        var createdAt: Double
        var endsAt: Double
        var cancelInitiatedAt: Double?
        var endedAt: Double?
        var results: [UInt8] = []
        var succeeded = 0
        var errored = 0
        var canceled = 0
        var expired = 0
    }

    struct State {
        /// Oldest first; listed newest first.
        var batches: [Batch] = []
        var creations: [String: Int] = [:]
        var downloads: [String: Int] = [:]
        var trickled = 0
        var createFaults: [StubBatchOptions.Fault]
        var pollFaults: [StubBatchOptions.Fault]
        var downloadFaults: [StubBatchOptions.Fault]
        var next = 0

        mutating func id() -> String {
            next += 1
            return "msgbatch_stub\(String(format: "%06d", next))"
        }
    }

    private let state: Mutex<State>
    private let options: StubBatchOptions
    private let responder: StubResponder

    init(options: StubBatchOptions, responder: StubResponder) {
        self.options = options
        self.responder = responder
        state = Mutex(State(createFaults: options.createFaults, pollFaults: options.pollFaults, downloadFaults: options.downloadFaults))
    }

    /// The groups created (with their counts), the groups whose batch was cancelled, and
    /// the results fetches per group.
    var counts: StubBatchCounts {
        state.withLock { state in
            StubBatchCounts(creations: state.creations,
                            cancelled: state.batches.filter { $0.cancelInitiatedAt != nil }.compactMap { $0.requests.first.map { Self.group(of: $0.0) } },
                            downloads: state.downloads, trickled: state.trickled)
        }
    }

    /// The answer to a Message Batches request, or nil when `path` is not one.
    func respond(method: String, path: String, query: [String: String], body: [UInt8], headers: [String: String]) -> StubResponder.Response? {
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count >= 3, parts[0] == "v1", parts[1] == "messages", parts[2] == "batches" else { return nil }
        if headers["authorization"] != nil { return Self.error(401, "authentication_error", "the key came as Authorization; Anthropic takes x-api-key") }
        guard let key = headers["x-api-key"], !key.isEmpty else { return Self.error(401, "authentication_error", "x-api-key header is required") }
        guard headers["anthropic-version"]?.isEmpty == false else { return Self.error(400, "invalid_request_error", "anthropic-version header is required") }
        let host = headers["host"] ?? "127.0.0.1"
        switch (method, parts.count) {
        case ("POST", 3): return create(body, headers: headers, host: host)
        case ("GET", 3): return list(query, host: host)
        case ("GET", 4): return retrieve(parts[3], headers: headers, host: host)
        case ("POST", 5) where parts[4] == "cancel": return cancel(parts[3], host: host)
        case ("GET", 5) where parts[4] == "results": return results(parts[3])
        default: return Self.error(404, "not_found_error", "no route for \(method) \(path)")
        }
    }

    /// The group id a custom_id carries: all before its last `-`.
    static func group(of customID: String) -> String {
        guard let dash = customID.lastIndex(of: "-") else { return customID }
        return String(customID[..<dash])
    }

    private static func customIDByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
    }

    private func create(_ body: [UInt8], headers: [String: String], host: String) -> StubResponder.Response {
        guard let request = JSONObject.parse(body) else { return Self.error(400, "invalid_request_error", "the body is not a JSON object") }
        guard let list = request["requests"] as? [Any], !list.isEmpty else {
            return Self.error(400, "invalid_request_error", "requests: a non-empty array is required")
        }
        var requests: [(String, [UInt8])] = []
        var seen = Set<String>()
        for (index, item) in list.enumerated() {
            guard let entry = item as? [String: Any], let customID = entry["custom_id"] as? String,
                  let params = entry["params"] as? [String: Any] else {
                return Self.error(400, "invalid_request_error", "requests.\(index): custom_id and params are required")
            }
            guard (1...64).contains(customID.utf8.count),
                  customID.utf8.allSatisfy(Self.customIDByte) else {
                return Self.error(400, "invalid_request_error", "requests.\(index).custom_id: must match ^[a-zA-Z0-9_-]{1,64}$")
            }
            guard seen.insert(customID).inserted else {
                return Self.error(400, "invalid_request_error", "requests.\(index).custom_id: \(customID) is used twice")
            }
            guard params["model"] is String, params["max_tokens"] is Int, params["messages"] is [Any] else {
                return Self.error(400, "invalid_request_error", "requests.\(index).params: model, max_tokens and messages are required")
            }
            requests.append((customID, JSONObject.encode(params)))
        }
        let outcome = state.withLock { state -> (batch: Batch?, lost: Bool, refusal: StubResponder.Response?) in
            let fault = StubCreateFaults.next(&state.createFaults)
            if case .status(let status)? = fault {
                return (nil, false, Self.error(status, status == 429 ? "rate_limit_error" : "api_error", "stub answered \(status) to the create as asked"))
            }
            if fault == .echoKey { return (nil, false, Self.error(401, "authentication_error", StubResponder.keyEcho(headers))) }
            let now = Date().timeIntervalSince1970
            let batch = Batch(id: state.id(), requests: requests, headers: headers, createdAt: now, endsAt: now + max(0, options.seconds))
            state.batches.append(batch)
            state.creations[Self.group(of: requests[0].0), default: 0] += 1
            return (batch, fault == .lost, nil)
        }
        guard let batch = outcome.batch else { return outcome.refusal ?? Self.error(500, "api_error", "no batch") }
        return StubCreateFaults.answer(Self.ok(Self.object(batch, host: host)), lost: outcome.lost)
    }

    private func retrieve(_ id: String, headers: [String: String], host: String) -> StubResponder.Response {
        let fault = state.withLock { state in
            let fault = StubCreateFaults.next(&state.pollFaults)
            if fault == .trickle { state.trickled += 1 }
            return fault
        }
        if fault == .echoKey {
            return Self.error(401, "authentication_error", StubResponder.keyEcho(headers))
        }
        if case .status(let status)? = fault { return Self.error(status, "api_error", "stub answered \(status) to the poll as asked") }
        guard let batch = settled(id) else { return Self.error(404, "not_found_error", "no message batch \(id)") }
        let answer = Self.ok(Self.object(batch, host: host))
        return fault == .trickle ? StubCreateFaults.trickled(answer) : answer
    }

    private func list(_ query: [String: String], host: String) -> StubResponder.Response {
        let limit = min(max(query["limit"].flatMap { Int($0) } ?? 20, 1), 1000)
        let ids = state.withLock { $0.batches.reversed().map(\.id) }
        var range = 0..<ids.count
        if let after = query["after_id"] {
            guard let index = ids.firstIndex(of: after) else { return Self.error(400, "invalid_request_error", "after_id: no message batch \(after)") }
            range = (index + 1)..<ids.count
        } else if let before = query["before_id"] {
            guard let index = ids.firstIndex(of: before) else { return Self.error(400, "invalid_request_error", "before_id: no message batch \(before)") }
            range = max(0, index - limit)..<index
        }
        let slice = ids[range.lowerBound..<min(range.upperBound, range.lowerBound + limit)]
        let page = slice.compactMap(settled)
        let listing: [String: Any] = ["data": page.map { Self.object($0, host: host) }, "first_id": page.first?.id ?? NSNull(),
                                      "last_id": page.last?.id ?? NSNull(),
                                      "has_more": query["before_id"] != nil ? range.lowerBound > 0 : slice.endIndex < range.upperBound]
        return Self.ok(listing)
    }

    private func cancel(_ id: String, host: String) -> StubResponder.Response {
        let batch = state.withLock { state -> Batch? in
            guard let index = state.batches.firstIndex(where: { $0.id == id }) else { return nil }
            if state.batches[index].endedAt == nil && state.batches[index].cancelInitiatedAt == nil {
                state.batches[index].cancelInitiatedAt = Date().timeIntervalSince1970
            }
            return state.batches[index]
        }
        guard let batch else { return Self.error(404, "not_found_error", "no message batch \(id)") }
        return Self.ok(Self.object(batch, host: host))
    }

    private func results(_ id: String) -> StubResponder.Response {
        guard let batch = settled(id) else { return Self.error(404, "not_found_error", "no message batch \(id)") }
        guard batch.endedAt != nil else { return Self.error(400, "invalid_request_error", "message batch \(id) is still in progress") }
        return state.withLock { state in
            if let first = batch.requests.first { state.downloads[Self.group(of: first.0), default: 0] += 1 }
            return StubDownloadFaults.answer(batch.results, contentType: "application/binary", faults: &state.downloadFaults)
        }
    }

    /// The batch as it is now: one whose time has come (or whose cancel was asked) is run,
    /// once, under the lock, so two polls at once never answer it twice.
    private func settled(_ id: String) -> Batch? {
        state.withLock { state -> Batch? in
            guard let index = state.batches.firstIndex(where: { $0.id == id }) else { return nil }
            var batch = state.batches[index]
            let now = Date().timeIntervalSince1970
            guard batch.endedAt == nil, batch.cancelInitiatedAt != nil || now >= batch.endsAt else { return batch }
            for (customID, params) in batch.requests {
                let result: [String: Any]
                if batch.cancelInitiatedAt != nil {
                    result = ["type": "canceled"]
                    batch.canceled += 1
                } else {
                    guard let answered = answer(params, headers: batch.headers) else { continue }
                    result = answered
                    switch answered["type"] as? String {
                    case "succeeded": batch.succeeded += 1
                    case "expired": batch.expired += 1
                    default: batch.errored += 1
                    }
                }
                batch.results += StubResponder.json(["custom_id": customID, "result": result]) + [0x0A]
            }
            batch.endedAt = now
            state.batches[index] = batch
            return batch
        }
    }

    /// One request's result as the live stub answers its params, or as its `batch_line`
    /// directive says; nil for a request to leave out.
    private func answer(_ params: [UInt8], headers: [String: String]) -> [String: Any]? {
        let object = JSONObject.parse(params) ?? [:]
        switch (object["stub"] as? [String: Any])?["batch_line"] as? String {
        case "omit"?: return nil
        case "expire"?: return ["type": "expired"]
        case "fail"?: return ["type": "errored", "error": ["type": "error", "error": ["type": "api_error", "message": "the stub failed this request as asked"]]]
        default: break
        }
        if options.ending == "expired" { return ["type": "expired"] }
        var liveHeaders = headers
        liveHeaders["content-type"] = "application/json"
        var body = object
        body.removeValue(forKey: "stream")
        let response = responder.respond(method: "POST", path: "/v1/messages", body: JSONObject.encode(body), headers: liveHeaders)
        let answer = JSONObject.parse(response.body)
        if (200..<300).contains(response.status), let answer {
            return ["type": "succeeded", "message": answer]
        }
        let error = (answer?["error"] as? [String: Any]) ?? ["type": "api_error", "message": String(decoding: response.body.prefix(200), as: UTF8.self)]
        return ["type": "errored", "error": ["type": "error", "error": error]]
    }

    private static func object(_ batch: Batch, host: String) -> [String: Any] {
        let processing = batch.endedAt != nil ? "ended" : batch.cancelInitiatedAt != nil ? "canceling" : "in_progress"
        return ["id": batch.id, "type": "message_batch", "processing_status": processing,
                "request_counts": ["processing": batch.endedAt == nil ? batch.requests.count : 0, "succeeded": batch.succeeded,
                                   "errored": batch.errored, "canceled": batch.canceled, "expired": batch.expired],
                "created_at": time(batch.createdAt), "expires_at": time(batch.createdAt + 86_400),
                "ended_at": batch.endedAt.map(time) ?? NSNull(), "archived_at": NSNull(),
                "cancel_initiated_at": batch.cancelInitiatedAt.map(time) ?? NSNull(),
                "results_url": batch.endedAt != nil ? "http://\(host)/v1/messages/batches/\(batch.id)/results" : NSNull()]
    }

    /// Anthropic's RFC 3339 timestamps.
    private static func time(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: seconds.rounded(.down)))
    }

    private static func ok(_ object: Any) -> StubResponder.Response {
        StubResponder.Response(status: 200, headers: [("Content-Type", "application/json")], latencyMs: 0,
                               pieces: [.init(bytes: StubResponder.json(object), delayMs: 0)])
    }

    private static func error(_ status: Int, _ type: String, _ message: String) -> StubResponder.Response {
        ok(["type": "error", "error": ["type": type, "message": message]]).with(status: status)
    }
}
