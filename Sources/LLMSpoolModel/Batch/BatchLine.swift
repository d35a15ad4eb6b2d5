/// One valid line of a batch file: its id, its kind, and the summary of its request, whose
/// offsets (`body`, `usageSplice`) are the batch file's, so that the engine sends the line's
/// body from the file in place as it sends a single request's.
public struct BatchLine: Sendable, Equatable {
    public var kind: BatchKind
    public var customID: String
    public var summary: RequestSummary

    /// The members an Anthropic line may have.
    public static let anthropicMembers: Set<String> = ["custom_id", "params"]
    /// The url whose dialect validates an Anthropic line's `params`.
    public static let anthropicURL = "/v1/messages"

    public init(kind: BatchKind, customID: String, summary: RequestSummary) {
        self.kind = kind
        self.customID = customID
        self.summary = summary
    }

    /// The kind a parsed line has: `params` without `body` or `url` is Anthropic's.
    public static func kind(of line: RawJSON.Value) -> BatchKind {
        line["params"] != nil && line["body"] == nil && line["url"] == nil ? .anthropic : .openai
    }

    /// Reads one line (without its newline) found at `offset` in a file of `fileSize`
    /// bytes. A problem's line is 1 and its column that of the line: the caller knows the
    /// line's number in the file.
    public static func read(_ line: [UInt8], at offset: Int, fileSize: Int, maxDepth: Int = RequestValidator.defaultMaxDepth,
                            dialects: [any Dialect] = DialectRegistry.all) -> Result<BatchLine, RequestProblem> {
        func at(_ byte: Int, _ kind: RequestProblem.Kind, _ message: String) -> Result<BatchLine, RequestProblem> {
            let (lineNumber, column) = RequestValidator.position(ofByte: byte, in: line)
            return .failure(RequestProblem(kind, message, line: lineNumber, column: column))
        }
        if let bad = RequestValidator.firstInvalidUTF8(line) { return at(bad, .notUTF8, "the line is not UTF-8") }
        if let deep = RequestValidator.firstOffset(deeperThan: maxDepth, in: line) {
            return at(deep, .tooDeep, "the line nests deeper than \(maxDepth) levels")
        }
        let value: RawJSON.Value
        do {
            value = try RawJSON.parse(line)
        } catch {
            return at(error.offset, .invalidJSON, "the line is not valid JSON: \(error.reason)")
        }
        guard case .object(let entries, _) = value else {
            return at(value.range.lowerBound, .notAnObject, "the line must be a JSON object, not \(RequestValidator.kindName(value))")
        }
        let kind = kind(of: value)
        let customID: String?
        let body: RawJSON.Value
        let dialect: any Dialect
        var window: String?
        switch kind {
        case .openai:
            switch RequestEnvelope.read(value, in: line, urls: dialects.map(\.url), requireCustomID: true) {
            case .failure(let problem):
                return .failure(problem.line == nil ? RequestProblem(problem.kind, problem.message, line: 1, column: 1) : problem)
            case .success(let envelope):
                guard let found = dialects.first(where: { $0.url == envelope.url }) else {
                    return at(0, .unsupported, "\"url\" \"\(envelope.url)\" is not supported")
                }
                customID = envelope.customID
                body = envelope.body
                dialect = found
                window = envelope.completionWindow
            }
        case .anthropic:
            if let unknown = entries.first(where: { !anthropicMembers.contains($0.key) }) {
                return at(unknown.value.range.lowerBound, .unknownMember,
                          "the line has an unknown member \"\(RequestEnvelope.shown(unknown.key))\" (an Anthropic batch line has custom_id, params)")
            }
            guard let idValue = value["custom_id"] else { return at(0, .missingField, "the line has no \"custom_id\"") }
            guard case .string = idValue, let text = RawJSON.string(idValue, in: line), !text.isEmpty else {
                return at(idValue.range.lowerBound, .wrongType, "\"custom_id\" must be a non-empty string")
            }
            guard let params = value["params"], case .object = params else {
                return at(value["params"]?.range.lowerBound ?? 0, .wrongType, "\"params\" must be an object (a Messages request)")
            }
            guard let found = dialects.first(where: { $0.url == anthropicURL }) else {
                return at(params.range.lowerBound, .unsupported,
                          "Anthropic batch lines need the Messages dialect (\(anthropicURL)), which this daemon does not have")
            }
            customID = text
            body = params
            dialect = found
        }
        guard let customID else { return at(0, .missingField, "the line has no \"custom_id\"") }
        switch RequestValidator.summarise(body, in: line, as: dialect, body: body.range) {
        case .failure(let problem):
            return .failure(problem)
        case .success(let summary):
            var shifted = RequestSummary(model: summary.model, stream: summary.stream, size: fileSize,
                                         estimatedTokens: summary.estimatedTokens, usageSplice: summary.usageSplice.map { $0 + offset })
            shifted.body = (summary.body.lowerBound + offset)..<(summary.body.upperBound + offset)
            shifted.dialect = summary.dialect
            shifted.customID = customID
            shifted.completionWindow = window
            return .success(BatchLine(kind: kind, customID: customID, summary: shifted))
        }
    }
}
