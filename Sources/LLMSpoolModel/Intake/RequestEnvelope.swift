/// A request in the OpenAI Batch line shape, `{"custom_id", "method", "url", "body"}`: the
/// one shape that names its dialect, shared by single request files and batch lines.
public struct RequestEnvelope: Sendable, Equatable {
    /// The members an envelope may have; anything else is a typo to report, not to ignore.
    public static let members: Set<String> = ["custom_id", "method", "url", "body", "completion_window"]

    /// The caller's own id for the request, when it gave one.
    public var customID: String?
    /// The endpoint path that names the dialect, such as `/v1/responses`.
    public var url: String
    /// The body object, which is what is sent.
    public var body: RawJSON.Value
    /// OpenAI's name for "this can wait" (`"24h"`), when the request says so.
    public var completionWindow: String?

    /// Whether a parsed request object is an envelope rather than a bare chat body: it
    /// has a member only envelopes have. No dialect's body has `url` or `body` at its top.
    public static func isEnvelope(_ request: RawJSON.Value) -> Bool {
        request["body"] != nil || request["url"] != nil
    }

    /// A value from the file as a message may quote it: escaped, and not the whole of a huge one.
    static func shown(_ text: String) -> String {
        text.count > 120 ? TextEscaping.escape(String(text.prefix(120))) + "…" : TextEscaping.escape(text)
    }

    /// Reads an envelope from a parsed object of `bytes`; the problem names the member and
    /// its position. `urls` are the supported ones, listed in the message for an unknown one.
    public static func read(_ request: RawJSON.Value, in bytes: [UInt8], urls: [String],
                            requireCustomID: Bool = false) -> Result<RequestEnvelope, RequestProblem> {
        guard case .object(let entries, _) = request else {
            return .failure(RequestProblem(.notAnObject, "the request must be a JSON object, not \(RequestValidator.kindName(request))"))
        }
        func problem(_ kind: RequestProblem.Kind, _ message: String, at value: RawJSON.Value?) -> Result<RequestEnvelope, RequestProblem> {
            guard let value else { return .failure(RequestProblem(kind, message)) }
            let (line, column) = RequestValidator.position(ofByte: value.range.lowerBound, in: bytes)
            return .failure(RequestProblem(kind, message, line: line, column: column))
        }
        if let unknown = entries.first(where: { !members.contains($0.key) }) {
            return problem(.unknownMember, "the envelope has an unknown member \"\(shown(unknown.key))\" (an envelope has \(members.sorted().joined(separator: ", ")))", at: unknown.value)
        }
        var customID: String?
        if let value = request["custom_id"] {
            guard case .string = value, let text = RawJSON.string(value, in: bytes) else {
                return problem(.wrongType, "\"custom_id\" must be a string, not \(RequestValidator.kindName(value))", at: value)
            }
            guard !text.isEmpty else { return problem(.wrongType, "\"custom_id\" must not be empty", at: value) }
            customID = text
        } else if requireCustomID {
            return problem(.missingField, "the line has no \"custom_id\"", at: nil)
        }
        if let value = request["method"] {
            guard case .string = value, let method = RawJSON.string(value, in: bytes) else {
                return problem(.wrongType, "\"method\" must be a string, not \(RequestValidator.kindName(value))", at: value)
            }
            guard method == "POST" else {
                return problem(.unsupported, "\"method\" must be \"POST\", not \"\(shown(method))\"", at: value)
            }
        }
        let supported = urls.joined(separator: ", ")
        guard let urlValue = request["url"] else {
            return problem(.missingField, "the envelope has no \"url\" (one of \(supported))", at: nil)
        }
        guard case .string = urlValue, let url = RawJSON.string(urlValue, in: bytes) else {
            return problem(.wrongType, "\"url\" must be a string (one of \(supported)), not \(RequestValidator.kindName(urlValue))", at: urlValue)
        }
        guard urls.contains(url) else {
            return problem(.unsupported, "\"url\" \"\(shown(url))\" is not supported; the supported urls are \(supported)", at: urlValue)
        }
        guard let body = request["body"] else {
            return problem(.missingField, "the envelope has no \"body\"", at: nil)
        }
        guard case .object = body else {
            return problem(.wrongType, "\"body\" must be an object, not \(RequestValidator.kindName(body))", at: body)
        }
        var window: String?
        if let value = request["completion_window"], !value.isNull {
            guard case .string = value, let text = RawJSON.string(value, in: bytes) else {
                return problem(.wrongType, "\"completion_window\" must be a string such as \"24h\", not \(RequestValidator.kindName(value))", at: value)
            }
            window = text
        }
        return .success(RequestEnvelope(customID: customID, url: url, body: body, completionWindow: window))
    }
}
