/// OpenAI's legacy completions (`POST {base}/completions`, `model` and `prompt`), which
/// vLLM and llama.cpp still serve.
public struct CompletionsDialect: Dialect {
    public static let id = "completions"

    public init() {}

    public var id: String { Self.id }

    public var path: String { "/completions" }

    public var usageMember: [UInt8] { Array(#""stream_options":{"include_usage":true},"#.utf8) }

    public func summarise(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<RequestSummary, RequestProblem> {
        let model: String, prompt: RawJSON.Value
        switch DialectFields.prologue(request, input: "prompt", in: bytes) {
        case .success(let fields): (model, prompt) = (fields.model, fields.input)
        case .failure(let problem): return .failure(problem)
        }
        switch prompt {
        case .string, .array: break
        default:
            return .failure(DialectFields.problem(.wrongType, "\"prompt\" must be a string or an array, not \(DialectFields.describe(prompt))", at: prompt, in: bytes))
        }
        let stream: Bool, budget: Int?
        switch DialectFields.streamAndBudget(request, budget: "max_tokens", in: bytes) {
        case .success(let fields): (stream, budget) = (fields.stream, fields.budget)
        case .failure(let problem): return .failure(problem)
        }
        // A stream that did not ask for its usage gets the member right after the brace.
        let splice = stream && request["stream_options"] == nil ? request.range.lowerBound : nil
        return .success(RequestSummary(model: model, stream: stream, size: bytes.count,
                                       estimatedTokens: DialectFields.estimate(characters: DialectFields.characters(in: prompt), budget: budget),
                                       usageSplice: splice))
    }

    public func headers(apiKey: String?) -> [String] {
        apiKey.map { ["Authorization: Bearer \($0)"] } ?? []
    }

    public func makeAssembler() -> any StreamAssembling {
        CompletionsAssembler()
    }

    public func usage(ofPlainAnswer answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]? {
        AttemptJudge.usage(answer, in: body)
    }

    public func plainAnswerProblem(_ answer: RawJSON.Value, in body: [UInt8]) -> String? {
        guard let object = answer["object"], RawJSON.string(object, in: body) == "text_completion",
              case .array? = answer["choices"] else {
            return "the answer is not a completion (\"object\": \"text_completion\" with \"choices\")"
        }
        return nil
    }

    public func streamFailure(message: String, body: [UInt8], status: Int) -> AttemptFailure {
        AttemptFailure(.providerError, message, httpStatus: status, providerBody: body,
                       embeddedCode: ProviderError.embeddedCode(inBody: body))
    }

    // An event or result that is not JSON (such as `[DONE]`) has no text.
    public func textDelta(ofEvent payload: [UInt8]) -> String? {
        guard let chunk = RawJSON.valueIfJSON(payload), case .array(let choices, _)? = chunk["choices"],
              let text = choices.first?["text"] else { return nil }
        return RawJSON.string(text, in: payload)
    }

    public func answerText(ofResult result: [UInt8]) -> String? {
        guard let object = RawJSON.valueIfJSON(result), case .array(let choices, _)? = object["choices"],
              let text = choices.first?["text"] else { return nil }
        return RawJSON.string(text, in: result)
    }
}
