/// `outgoing/<id>.md` and `outgoing/<id>.txt`: prompt files (`PromptFile`). The body is
/// made from the file when it is sent, and validated as the dialect its `api` names.
public struct PromptRequestFormat: RequestFormat {
    public static let id = "prompt"
    public static let transcriptSuffix = ".md"

    public init() {}

    public var id: String { Self.id }

    public var suffixes: [String] { [".md", ".txt"] }

    public var makesBody: Bool { true }

    public var textPartial: Bool { true }

    public func prepare(_ bytes: [UInt8], context: FormatContext) -> FormatVerdict {
        let file: PromptFile
        switch PromptFile.parse(bytes, yaml: context.yaml) {
        case .success(let parsed): file = parsed
        case .failure(let problem): return .invalid(problem)
        }
        if file.settings.draft { return .draft }
        let made: (url: String, body: JSONValue)
        switch PromptBody.make(file, defaultModel: context.defaultModel) {
        case .success(let result): made = result
        case .failure(let problem): return .invalid(problem)
        }
        guard let dialect = context.dialects.first(where: { $0.url == made.url }) else {
            return .invalid(RequestProblem(.unsupported, "\"api: \(file.settings.api.rawValue)\" needs the dialect of \(made.url), "
                + "which this daemon does not have (it has \(context.dialects.map(\.url).joined(separator: ", ")))", line: 1, column: 1))
        }
        let body = made.body.encoded()
        let parsed: RawJSON.Value
        do {
            parsed = try RawJSON.parse(body)
        } catch {
            return .invalid(RequestProblem(.invalidPrompt, "the body made from the prompt file is not JSON: \(error.reason)"))
        }
        switch RequestValidator.summarise(parsed, in: body, as: dialect, body: 0..<body.count) {
        case .success(var summary):
            summary.format = id
            summary.endpoint = file.settings.endpoint
            return .request(summary, body: body)
        case .failure(let problem):
            // Positions in the made body mean nothing to the person: the message stands alone.
            return .invalid(RequestProblem(problem.kind, "the body made from the prompt file is refused: \(problem.message)", line: 1, column: 1))
        }
    }

    public func transcript(of bytes: [UInt8], answer: String, context: FormatContext) -> [UInt8]? {
        guard case .success(let file) = PromptFile.parse(bytes, yaml: context.yaml) else { return nil }
        return PromptTranscript.render(file, answer: answer)
    }
}
