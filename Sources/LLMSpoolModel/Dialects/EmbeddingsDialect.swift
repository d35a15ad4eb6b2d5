/// OpenAI's embeddings (`POST {base}/embeddings`, `model` and `input`): vectors for
/// indexing jobs. The API has no stream, so neither does the dialect.
public struct EmbeddingsDialect: Dialect {
    public static let id = "embeddings"

    public init() {}

    public var id: String { Self.id }

    public var path: String { "/embeddings" }

    /// Empty: an embedding is never streamed, so nothing is spliced.
    public var usageMember: [UInt8] { [] }

    public func summarise(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<RequestSummary, RequestProblem> {
        let model: String, input: RawJSON.Value
        switch DialectFields.prologue(request, input: "input", in: bytes) {
        case .success(let fields): (model, input) = (fields.model, fields.input)
        case .failure(let problem): return .failure(problem)
        }
        switch input {
        case .string: break
        case .array(let elements, _) where !elements.isEmpty: break
        case .array:
            return .failure(DialectFields.problem(.wrongType, "\"input\" must not be an empty array", at: input, in: bytes))
        default:
            return .failure(DialectFields.problem(.wrongType, "\"input\" must be a string or an array, not \(DialectFields.describe(input))", at: input, in: bytes))
        }
        // An endpoint would ignore or refuse the flag; either way no stream comes back.
        if let value = request["stream"], case .bool(true, _) = value {
            return .failure(DialectFields.problem(.unsupported, "embeddings do not stream: \"stream\" must be false or absent", at: value, in: bytes))
        }
        return .success(RequestSummary(model: model, stream: false, size: bytes.count,
                                       estimatedTokens: DialectFields.estimate(characters: DialectFields.characters(in: input), budget: nil)))
    }

    public func headers(apiKey: String?) -> [String] {
        apiKey.map { ["Authorization: Bearer \($0)"] } ?? []
    }

    /// Never used: a summary of this dialect never streams. Chat's assembler stands in so
    /// that the requirement is met without a type that does nothing.
    public func makeAssembler() -> any StreamAssembling {
        StreamAssembler()
    }

    public func usage(ofPlainAnswer answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]? {
        AttemptJudge.usage(answer, in: body)
    }

    public func plainAnswerProblem(_ answer: RawJSON.Value, in body: [UInt8]) -> String? {
        guard let object = answer["object"], RawJSON.string(object, in: body) == "list", case .array? = answer["data"] else {
            return "the answer is not an embedding list (\"object\": \"list\" with \"data\")"
        }
        return nil
    }

    public func streamFailure(message: String, body: [UInt8], status: Int) -> AttemptFailure {
        AttemptFailure(.providerError, message, httpStatus: status, providerBody: body,
                       embeddedCode: ProviderError.embeddedCode(inBody: body))
    }

    public func textDelta(ofEvent payload: [UInt8]) -> String? { nil }

    /// Nil: vectors are no text. `summary(ofResult:)` says what a person needs to know.
    public func answerText(ofResult result: [UInt8]) -> String? { nil }

    /// One line for a person: how many vectors and of how many dimensions.
    public static func summary(ofResult result: [UInt8]) -> String? {
        guard let object = RawJSON.valueIfJSON(result), case .array(let data, _)? = object["data"] else { return nil }
        var dimensions = Set<Int>()
        for item in data {
            switch item["embedding"] {
            case .array(let numbers, _)?: dimensions.insert(numbers.count)
            case .string(let range)?:
                // base64 of little-endian float32s
                dimensions.insert(range.count / 4 * 3 / 4)
            default: continue
            }
        }
        let shown = dimensions.sorted().map(String.init).joined(separator: "/")
        return "\(data.count) embedding\(data.count == 1 ? "" : "s") of \(shown.isEmpty ? "0" : shown) dimensions"
    }
}
