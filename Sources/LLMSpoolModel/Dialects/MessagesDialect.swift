/// Anthropic's Messages API (`POST {base}/v1/messages`: `model`, `max_tokens`, `messages`),
/// served by endpoints whose `api` is `anthropic`.
public struct MessagesDialect: Dialect {
    public static let id = "messages"
    /// The `anthropic-version` an endpoint sends when its config names none.
    public static let defaultVersion = "2023-06-01"

    public init() {}

    public var id: String { Self.id }

    public var url: String { "/v1/messages" }

    /// The Anthropic SDK's base URL has no `/v1`, so the path carries it.
    public var path: String { "/v1/messages" }

    public var api: EndpointAPI { .anthropic }

    // Anthropic streams carry their usage in message_start and message_delta unasked.
    public var usageMember: [UInt8] { [] }

    public func summarise(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<RequestSummary, RequestProblem> {
        func problem(_ kind: RequestProblem.Kind, _ message: String, at value: RawJSON.Value) -> RequestProblem {
            let (line, column) = RequestValidator.position(ofByte: value.range.lowerBound, in: bytes)
            return RequestProblem(kind, message, line: line, column: column)
        }
        guard let modelValue = request["model"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"model\""))
        }
        guard case .string(let modelRange) = modelValue, !modelRange.isEmpty else {
            return .failure(problem(.wrongType, "\"model\" must be a non-empty string, not \(RequestValidator.kindName(modelValue))", at: modelValue))
        }
        let model = bytes.withUnsafeBytes { RawJSON.decodeString(UnsafeRawBufferPointer(rebasing: $0[modelRange])) }
        guard let maxTokensValue = request["max_tokens"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"max_tokens\" (Messages requires it)"))
        }
        guard let maxTokens = Self.positiveInteger(maxTokensValue, in: bytes) else {
            let shown = maxTokensValue.range.count <= 40 ? String(decoding: bytes[maxTokensValue.range], as: UTF8.self) : RequestValidator.kindName(maxTokensValue)
            return .failure(problem(.wrongType, "\"max_tokens\" must be a positive integer, not \(shown)", at: maxTokensValue))
        }
        guard let messages = request["messages"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"messages\""))
        }
        guard case .array(let messageList, _) = messages else {
            return .failure(problem(.wrongType, "\"messages\" must be an array, not \(RequestValidator.kindName(messages))", at: messages))
        }
        var stream = false
        if let value = request["stream"], !value.isNull {
            guard case .bool(let flag, _) = value else {
                return .failure(problem(.wrongType, "\"stream\" must be true or false, not \(RequestValidator.kindName(value))", at: value))
            }
            stream = flag
        }
        return .success(RequestSummary(model: model, stream: stream, size: bytes.count,
                                       estimatedTokens: Self.estimateTokens(messages: messageList, system: request["system"], maxTokens: maxTokens),
                                       usageSplice: nil))
    }

    /// A JSON integer above zero (no fraction, no exponent); numbers past Int's range count
    /// as the largest Int, which the estimate clamps.
    static func positiveInteger(_ value: RawJSON.Value, in bytes: [UInt8]) -> Int? {
        guard case .number(let range) = value else { return nil }
        let digits = bytes[range]
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard let number = Int(String(decoding: digits, as: UTF8.self)) else { return Int.max }
        return number > 0 ? number : nil
    }

    /// Four characters a token of the messages' and the system prompt's text (as written,
    /// escapes included), plus the output budget: enough for a token bucket.
    static func estimateTokens(messages: [RawJSON.Value], system: RawJSON.Value?, maxTokens: Int) -> Int {
        func characters(_ content: RawJSON.Value?) -> Int {
            switch content {
            case .string(let range)?:
                return range.count
            case .array(let blocks, _)?:
                return blocks.reduce(0) { total, block in
                    if case .string(let range)? = block["text"] { return total + range.count }
                    return total
                }
            default:
                return 0
            }
        }
        let text = messages.reduce(characters(system)) { $0 + characters($1["content"]) }
        // Clamped: a request may name any number, and the sum must not overflow.
        return text / 4 + 1 + min(maxTokens, 1 << 40)
    }

    public func headers(apiKey: String?) -> [String] {
        headers(apiKey: apiKey, anthropicVersion: Self.defaultVersion)
    }

    public func headers(apiKey: String?, anthropicVersion: String) -> [String] {
        (apiKey.map { ["x-api-key: \($0)"] } ?? []) + ["anthropic-version: \(anthropicVersion)"]
    }

    public func makeAssembler() -> any StreamAssembling {
        MessagesAssembler()
    }

    public func usage(ofPlainAnswer answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]? {
        AttemptJudge.usage(answer, in: body)
    }

    public func plainAnswerProblem(_ answer: RawJSON.Value, in body: [UInt8]) -> String? {
        guard let type = answer["type"].flatMap({ RawJSON.string($0, in: body) }) else {
            return "the answer has no \"type\"; a Messages answer is a \"message\""
        }
        guard type == "message" else { return "the answer's \"type\" is \"\(type.prefix(100))\", not \"message\"" }
        guard case .array? = answer["content"] else { return "the message has no \"content\" array" }
        return nil
    }

    public func streamFailure(message: String, body: [UInt8], status: Int) -> AttemptFailure {
        AttemptFailure(.providerError, message, httpStatus: status, providerBody: body,
                       embeddedCode: Self.status(ofErrorType: ProviderError.errorType(inBody: body)))
    }

    /// The HTTP status Anthropic answers a non-streamed request with for each error type:
    /// inside a stream (and in a Message Batch's `errored` result) only the type says
    /// whether a retry can help.
    static func status(ofErrorType type: String?) -> Int? {
        switch type {
        case "invalid_request_error": 400
        case "authentication_error": 401
        case "billing_error": 402
        case "permission_error": 403
        case "not_found_error": 404
        case "request_too_large": 413
        case "rate_limit_error": 429
        case "api_error": 500
        case "timeout_error": 504
        case "overloaded_error": 529
        default: nil
        }
    }
}

extension MessagesDialect {
    public func textDelta(ofEvent payload: [UInt8]) -> String? {
        guard let event = RawJSON.valueIfJSON(payload), let delta = event["delta"],
              delta["type"].flatMap({ RawJSON.string($0, in: payload) }) == "text_delta",
              let text = delta["text"] else { return nil }
        return RawJSON.string(text, in: payload)
    }

    public func answerText(ofResult result: [UInt8]) -> String? {
        guard let object = RawJSON.valueIfJSON(result), case .array(let blocks, _)? = object["content"] else { return nil }
        let texts = blocks.compactMap { block -> String? in
            guard block["type"].flatMap({ RawJSON.string($0, in: result) }) == "text" else { return nil }
            return block["text"].flatMap { RawJSON.string($0, in: result) }
        }
        return texts.isEmpty ? nil : texts.joined()
    }
}
