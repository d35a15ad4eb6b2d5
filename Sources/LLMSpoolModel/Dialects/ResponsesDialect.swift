/// OpenAI's Responses API (`POST {base}/responses`, `model` and `input`): the API OpenAI
/// recommends, whose stream is typed events ending with the whole `response`.
public struct ResponsesDialect: Dialect {
    public static let id = "responses"

    public init() {}

    public var id: String { Self.id }

    public var path: String { "/responses" }

    /// Empty: the terminal event carries the usage without being asked.
    public var usageMember: [UInt8] { [] }

    public func summarise(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<RequestSummary, RequestProblem> {
        let model: String, input: RawJSON.Value
        switch DialectFields.prologue(request, input: "input", in: bytes) {
        case .success(let fields): (model, input) = (fields.model, fields.input)
        case .failure(let problem): return .failure(problem)
        }
        switch input {
        case .string, .array: break
        default:
            return .failure(DialectFields.problem(.wrongType, "\"input\" must be a string or an array of items, not \(DialectFields.describe(input))", at: input, in: bytes))
        }
        let stream: Bool, budget: Int?
        switch DialectFields.streamAndBudget(request, budget: "max_output_tokens", in: bytes) {
        case .success(let fields): (stream, budget) = (fields.stream, fields.budget)
        case .failure(let problem): return .failure(problem)
        }
        var characters = DialectFields.characters(in: input)
        if let instructions = request["instructions"] { characters += DialectFields.characters(in: instructions) }
        return .success(RequestSummary(model: model, stream: stream, size: bytes.count,
                                       estimatedTokens: DialectFields.estimate(characters: characters, budget: budget)))
    }

    public func headers(apiKey: String?) -> [String] {
        apiKey.map { ["Authorization: Bearer \($0)"] } ?? []
    }

    public func makeAssembler() -> any StreamAssembling {
        ResponsesAssembler()
    }

    public func usage(ofPlainAnswer answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]? {
        AttemptJudge.usage(answer, in: body)
    }

    public func plainAnswerProblem(_ answer: RawJSON.Value, in body: [UInt8]) -> String? {
        guard case .string = answer["object"], RawJSON.string(answer["object"]!, in: body) == "response" else {
            return "the answer is not a Responses object (\"object\": \"response\")"
        }
        // A response that says it failed is no answer, streamed or not.
        if let status = answer["status"].flatMap({ RawJSON.string($0, in: body) }), status == "failed" || status == "cancelled" {
            let message = answer["error"]?["message"].flatMap { RawJSON.string($0, in: body) }
            return "the response has status \(status)" + (message.map { ": \($0)" } ?? "")
        }
        return nil
    }

    /// Codes of a failed response that another attempt may cure; every other code names a
    /// problem with the request itself (a bad prompt or image).
    static let retryableCodes: Set<String> = ["server_error", "rate_limit_exceeded", "vector_store_timeout"]

    /// The status a Responses error code amounts to for the retry rules: 429 and 500 are
    /// tried again, 400 is not; nil (no code) is tried again as any error in a stream is.
    public static func status(ofCode code: String?) -> Int? {
        guard let code else { return nil }
        if let number = Int(code) { return number }
        if code == "rate_limit_exceeded" { return 429 }
        return retryableCodes.contains(code) ? 500 : 400
    }

    /// The `code` of an `error` event, of a `response.failed` event's `response.error`, or
    /// of an OpenAI-shaped `{"error": {...}}`.
    static func code(inEvent body: [UInt8]) -> String? {
        guard let event = RawJSON.valueIfJSON(body) else { return nil }
        for candidate in [event["code"], event["response"]?["error"]?["code"], event["error"]?["code"]] {
            guard let candidate else { continue }
            switch candidate {
            case .string: return RawJSON.string(candidate, in: body)
            case .number(let range): return String(decoding: body[range], as: UTF8.self)
            default: continue
            }
        }
        return nil
    }

    public func streamFailure(message: String, body: [UInt8], status: Int) -> AttemptFailure {
        AttemptFailure(.providerError, message, httpStatus: status, providerBody: body,
                       embeddedCode: Self.status(ofCode: Self.code(inEvent: body)))
    }

    public func textDelta(ofEvent payload: [UInt8]) -> String? {
        guard let event = RawJSON.valueIfJSON(payload), let type = event["type"],
              RawJSON.string(type, in: payload) == "response.output_text.delta",
              let delta = event["delta"] else { return nil }
        return RawJSON.string(delta, in: payload)
    }

    /// The text of every `output_text` part of every message of the output, joined.
    public func answerText(ofResult result: [UInt8]) -> String? {
        guard let object = RawJSON.valueIfJSON(result), case .array(let items, _)? = object["output"] else { return nil }
        var texts: [String] = []
        for item in items {
            guard case .array(let parts, _)? = item["content"] else { continue }
            for part in parts {
                guard let type = part["type"], RawJSON.string(type, in: result) == "output_text",
                      let text = part["text"].flatMap({ RawJSON.string($0, in: result) }) else { continue }
                texts.append(text)
            }
        }
        return texts.isEmpty ? nil : texts.joined()
    }
}
