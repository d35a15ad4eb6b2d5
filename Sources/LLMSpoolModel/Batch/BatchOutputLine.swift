/// The output line of one input line, in the shape of its file's kind: OpenAI's
/// `{"id", "custom_id", "response", "error"}` or Anthropic's `{"custom_id", "result"}`.
/// Each ends with a newline and holds no other, whatever the server's formatting.
public enum BatchOutputLine {
    /// OpenAI's error code of a line cancelled with its batch.
    public static let cancelledCode = "batch_cancelled"
    /// OpenAI's error code of a line that ran out of time.
    public static let expiredCode = "batch_expired"

    /// The stable `batch_req_` id of a line: the same after a restart, unique in the batch.
    public static func requestID(batch: String, entry: Int) -> String {
        "batch_req_" + TextEscaping.leftPadded(String(Fingerprint.hash(Array(batch.utf8) + [0]
            + Array(String(entry).utf8)), radix: 16), to: 16)
    }

    /// Whether an output line (without its newline) belongs in the errors file: OpenAI's
    /// with an `error` that is not null, Anthropic's whose `result.type` is not `succeeded`.
    /// A line that cannot be read counts as failed: the errors file errs toward showing it.
    public static func isFailed(_ line: UnsafeRawBufferPointer) -> Bool {
        guard let object = try? RawJSON.parse(line, maximumDepth: maximumDepth), case .object = object else { return true }
        if let result = object["result"] {
            guard case .string(let range)? = result["type"] else { return true }
            return !UnsafeRawBufferPointer(rebasing: line[range]).elementsEqual("succeeded".utf8)
        }
        guard let error = object["error"] else { return true }
        return !error.isNull
    }

    /// How deep an output line is read: it holds its answer two levels down (`response.body`,
    /// `result.message`), so an answer as deep as one may be (`RawJSON.maximumDepth`) is read.
    public static let maximumDepth = RawJSON.maximumDepth + 2

    public static func encode(kind: BatchKind, batch: String, entry: Int, customID: String, result: BatchLineResult) -> [UInt8] {
        let line: [UInt8]
        switch kind {
        case .openai: line = openAI(batch: batch, entry: entry, customID: customID, result: result)
        case .anthropic: line = anthropic(customID: customID, result: result)
        }
        return line + [0x0A]
    }

    static func openAI(batch: String, entry: Int, customID: String, result: BatchLineResult) -> [UInt8] {
        let response: [UInt8]
        let error: [UInt8]
        switch result {
        case .succeeded(let status, let requestID, let body):
            response = JSONWriter.object([("status_code", JSONWriter.number(status)),
                                          ("request_id", requestID.map(JSONWriter.quoted) ?? JSONWriter.null),
                                          ("body", JSONWriter.compact(body))])
            error = JSONWriter.null
        case .failed(let code, let message, let status, let body):
            if let status {
                response = JSONWriter.object([("status_code", JSONWriter.number(status)), ("request_id", JSONWriter.null),
                                              ("body", body.map(JSONWriter.embeddable) ?? JSONWriter.null)])
            } else {
                response = JSONWriter.null
            }
            error = JSONWriter.object([("code", JSONWriter.quoted(code)), ("message", JSONWriter.quoted(message))])
        case .cancelled:
            response = JSONWriter.null
            error = JSONWriter.object([("code", JSONWriter.quoted(cancelledCode)),
                                       ("message", JSONWriter.quoted("the batch was cancelled before this request ended"))])
        case .expired:
            response = JSONWriter.null
            error = JSONWriter.object([("code", JSONWriter.quoted(expiredCode)),
                                       ("message", JSONWriter.quoted("the request did not end within max_lifetime_seconds"))])
        }
        return JSONWriter.object([("id", JSONWriter.quoted(requestID(batch: batch, entry: entry))),
                                  ("custom_id", JSONWriter.quoted(customID)), ("response", response), ("error", error)])
    }

    static func anthropic(customID: String, result: BatchLineResult) -> [UInt8] {
        let outcome: [UInt8]
        switch result {
        case .succeeded(_, _, let body):
            outcome = JSONWriter.object([("type", JSONWriter.quoted("succeeded")), ("message", JSONWriter.compact(body))])
        case .failed(let code, let message, _, let body):
            outcome = JSONWriter.object([("type", JSONWriter.quoted("errored")), ("error", anthropicError(code: code, message: message, body: body))])
        case .cancelled:
            outcome = JSONWriter.object([("type", JSONWriter.quoted("canceled"))])
        case .expired:
            outcome = JSONWriter.object([("type", JSONWriter.quoted("expired"))])
        }
        return JSONWriter.object([("custom_id", JSONWriter.quoted(customID)), ("result", outcome)])
    }

    /// Anthropic's error response `{"type": "error", "error": {"type", "message"}}`: the
    /// provider's own when it sent one, else one made of the failure.
    static func anthropicError(code: String, message: String, body: [UInt8]?) -> [UInt8] {
        if let body, let value = JSONWriter.parsed(body), value["type"].flatMap({ RawJSON.string($0, in: body) }) == "error",
           case .object? = value["error"] {
            return JSONWriter.compact(body)
        }
        let type = code == "invalid-request" || code == "http" ? "invalid_request_error" : "api_error"
        return JSONWriter.object([("type", JSONWriter.quoted("error")),
                                  ("error", JSONWriter.object([("type", JSONWriter.quoted(type)), ("message", JSONWriter.quoted(message))]))])
    }
}
