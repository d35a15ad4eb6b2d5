/// OpenAI-style chat completions (`POST {base}/chat/completions`, `model` and `messages`),
/// the dialect every OpenAI-compatible server speaks.
public struct ChatCompletionsDialect: Dialect {
    public static let id = "chat.completions"

    public init() {}

    public var id: String { Self.id }

    public var path: String { "/chat/completions" }

    public var usageMember: [UInt8] { Array(#""stream_options":{"include_usage":true},"#.utf8) }

    /// A chat completion carries its answers in `choices`; `object` is not required, as some
    /// compatible servers leave it out. Without this, `{}` or a body cut short to one was
    /// published as a success.
    public func plainAnswerProblem(_ answer: RawJSON.Value, in body: [UInt8]) -> String? {
        guard case .array? = answer["choices"] else { return "the answer is not a chat completion (no \"choices\" array)" }
        return nil
    }

    public func summarise(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<RequestSummary, RequestProblem> {
        guard let modelValue = request["model"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"model\""))
        }
        guard case .string(let modelRange) = modelValue, !modelRange.isEmpty else {
            return .failure(RequestProblem(.wrongType, "\"model\" must be a non-empty string, not \(RequestValidator.kindName(modelValue))"))
        }
        let model = bytes.withUnsafeBytes { RawJSON.decodeString(UnsafeRawBufferPointer(rebasing: $0[modelRange])) }
        guard let messages = request["messages"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"messages\""))
        }
        guard case .array(let messageList, _) = messages else {
            return .failure(RequestProblem(.wrongType, "\"messages\" must be an array, not \(RequestValidator.kindName(messages))"))
        }
        var stream = false
        if let value = request["stream"], !value.isNull {
            guard case .bool(let flag, _) = value else {
                return .failure(RequestProblem(.wrongType, "\"stream\" must be true or false, not \(RequestValidator.kindName(value))"))
            }
            stream = flag
        }
        var splice: Int?
        if stream && request["stream_options"] == nil {
            // The object has members (model, messages), so a member and a comma can go
            // right after its brace without reading or rewriting the rest.
            splice = request.range.lowerBound
        }
        return .success(RequestSummary(model: model, stream: stream, size: bytes.count,
                                       estimatedTokens: Self.estimateTokens(request, messages: messageList, bytes: bytes),
                                       usageSplice: splice))
    }

    /// A rough count, enough for a token bucket: four characters a token (counted as
    /// written, escapes included), plus the completion budget the request asks for.
    static func estimateTokens(_ request: RawJSON.Value, messages: [RawJSON.Value], bytes: [UInt8]) -> Int {
        var characters = 0
        for message in messages {
            switch message["content"] {
            case .string(let range)?:
                characters += range.count
            case .array(let parts, _)?:
                for part in parts {
                    if case .string(let range)? = part["text"] { characters += range.count }
                }
            default:
                break
            }
        }
        func integer(_ value: RawJSON.Value?) -> Int? {
            guard case .number(let range)? = value else { return nil }
            let text = String(decoding: bytes[range], as: UTF8.self)
            if let number = Int(text) { return number }
            // Digits past Int's range: as large as it gets (the sum is clamped below).
            return text.allSatisfy(\.isNumber) ? Int.max : nil
        }
        let budget = integer(request["max_completion_tokens"]) ?? integer(request["max_tokens"]) ?? 0
        // Clamped: a request may name any number, and the sum must not overflow.
        return characters / 4 + 1 + min(max(0, budget), 1 << 40)
    }

    public func headers(apiKey: String?) -> [String] {
        apiKey.map { ["Authorization: Bearer \($0)"] } ?? []
    }

    public func makeAssembler() -> any StreamAssembling {
        StreamAssembler()
    }

    public func usage(ofPlainAnswer answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]? {
        AttemptJudge.usage(answer, in: body)
    }

    public func streamFailure(message: String, body: [UInt8], status: Int) -> AttemptFailure {
        AttemptFailure(.providerError, message, httpStatus: status, providerBody: body,
                       embeddedCode: ProviderError.embeddedCode(inBody: body))
    }
}

extension ChatCompletionsDialect {
    // An event or result that is not JSON (such as `[DONE]`) has no text.
    public func textDelta(ofEvent payload: [UInt8]) -> String? {
        guard let chunk = RawJSON.valueIfJSON(payload), case .array(let choices, _)? = chunk["choices"],
              let content = choices.first?["delta"]?["content"] else { return nil }
        return RawJSON.string(content, in: payload)
    }

    public func answerText(ofResult result: [UInt8]) -> String? {
        guard let object = RawJSON.valueIfJSON(result), case .array(let choices, _)? = object["choices"],
              let content = choices.first?["message"]?["content"] else { return nil }
        return RawJSON.string(content, in: result)
    }
}

extension StreamAssembler: StreamAssembling {
    public var contentHead: [UInt8] { Self.contentHead }
}
