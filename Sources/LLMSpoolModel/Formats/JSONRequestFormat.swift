/// `outgoing/<id>.json`: a JSON body of a dialect, or an envelope naming one; sent as
/// the file's own bytes. A top-level `"draft": true` keeps it unsent (see `prepare`).
public struct JSONRequestFormat: RequestFormat {
    public static let id = "json"

    public init() {}

    public var id: String { Self.id }

    public var suffixes: [String] { [SpoolLayout.requestSuffix] }

    public func prepare(_ bytes: [UInt8], context: FormatContext) -> FormatVerdict {
        let validated = RequestValidator.validate(bytes, maxDepth: context.maxDepth, dialects: context.dialects)
        if let draft = draftVerdict(bytes, context: context) { return draft }
        switch validated {
        case .success(let summary): return .request(summary, body: nil)
        case .failure(let problem): return .invalid(problem)
        }
    }

    /// `.draft` for a top-level `"draft": true`, a problem for any other `draft`, nil without one.
    func draftVerdict(_ bytes: [UInt8], context: FormatContext) -> FormatVerdict? {
        let content = bytes.starts(with: RequestValidator.byteOrderMark) ? Array(bytes.dropFirst(3)) : bytes
        // No dialect's body has a top-level `draft`, so it can only be the writer's mark. Only
        // a file that parses (within the validator's depth) can say it: a half-typed one is
        // judged after the settle period, as any file not valid yet.
        guard RequestValidator.firstOffset(deeperThan: context.maxDepth, in: content) == nil else { return nil }
        if let object = RawJSON.valueIfJSON(content),
           case .object = object, let draft = object["draft"] {
            guard case .bool(true, _) = draft else {
                let (line, column) = RequestValidator.position(ofByte: draft.range.lowerBound + (bytes.starts(with: RequestValidator.byteOrderMark) ? 3 : 0), in: bytes)
                return .invalid(RequestProblem(.wrongType, "\"draft\" may only be true (leave the request unsent); remove it to send the request",
                                               line: line, column: column))
            }
            return .draft
        }
        return nil
    }
}
