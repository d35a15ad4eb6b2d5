
/// What the daemon needs to know about a valid request before it uploads it.
public struct RequestSummary: Sendable, Equatable {
    public let model: String
    public let stream: Bool
    public let size: Int
    /// Prompt characters / 4 plus `max_tokens`: what the token bucket charges up front.
    public let estimatedTokens: Int
    /// The offset of the object's opening brace, when the daemon must add
    /// `"stream_options": {"include_usage": true}` right after it (a stream that did not
    /// ask for its usage); nil when the body goes as it is.
    public let usageSplice: Int?
    /// The bytes of the file that are sent: the whole file but a UTF-8 byte order mark
    /// (which most JSON readers skip and some endpoints refuse), or an envelope's `body`.
    /// Offsets (`usageSplice`) are the file's.
    public var body: Range<Int>
    /// The `Dialect.id` of the dialect the request was validated as.
    public var dialect = ChatCompletionsDialect.id
    /// The envelope's `custom_id`, when the request came in one that had it.
    public var customID: String?
    /// The envelope's `completion_window` ("24h": the request can wait), when it had one.
    public var completionWindow: String?
    /// The `RequestFormat.id` of the file: for a format that makes its body (a prompt
    /// file), `size`, `body` and `usageSplice` are those of the body it made.
    public var format = JSONRequestFormat.id
    /// The configured endpoint the request must go to (a prompt file's `endpoint`), by name.
    public var endpoint: String?

    public init(model: String, stream: Bool, size: Int, estimatedTokens: Int = 0, usageSplice: Int? = nil) {
        self.model = model
        self.stream = stream
        self.size = size
        self.estimatedTokens = estimatedTokens
        self.usageSplice = usageSplice
        self.body = 0..<size
    }

    /// Bytes of the file before the body, which are not sent.
    public var skippedPrefix: Int { body.lowerBound }
}

/// Checks that a request is a UTF-8 JSON object of a registered dialect (whose own rules
/// are in its `Dialect`), before anything is sent. Pure: bytes in, verdict out.
public enum RequestValidator {
    /// The deepest nesting a request may have.
    public static let defaultMaxDepth = 64
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Validates a request file: a bare body of the first of `dialects` (chat completions
    /// among the registered ones), or an envelope whose `url` names one of `dialects`.
    public static func validate(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth,
                                dialects: [any Dialect] = DialectRegistry.all) -> Result<RequestSummary, RequestProblem> {
        if bytes.isEmpty { return .failure(RequestProblem(.invalidJSON, "the file is empty")) }
        // A UTF-8 byte order mark is read as blanks: every offset (positions of problems,
        // the usage splice) stays that of the file, and the upload leaves the mark out.
        let hasMark = bytes.starts(with: RequestValidator.byteOrderMark)
        let bytes = hasMark ? [0x20, 0x20, 0x20] + bytes.dropFirst(3) : bytes
        if let bad = firstInvalidUTF8(bytes) {
            let (line, column) = position(ofByte: bad, in: bytes)
            return .failure(RequestProblem(.notUTF8, "the file is not UTF-8 (invalid byte at offset \(bad))", line: line, column: column))
        }
        if let deep = firstOffset(deeperThan: maxDepth, in: bytes) {
            let (line, column) = position(ofByte: deep, in: bytes)
            return .failure(RequestProblem(.tooDeep, "the request nests deeper than \(maxDepth) levels", line: line, column: column))
        }
        // RawJSON, not Foundation: every request passes here on its way in, and the
        // reader neither bridges nor decodes what it does not need.
        let request: RawJSON.Value
        do {
            request = try RawJSON.parse(bytes)
        } catch {
            let (line, column) = position(ofByte: error.offset, in: bytes)
            return .failure(RequestProblem(.invalidJSON, "the file is not valid JSON: \(error.reason)", line: line, column: column))
        }
        guard case .object = request else {
            return .failure(RequestProblem(.notAnObject, "the request must be a JSON object, not \(kindName(request))"))
        }
        guard RequestEnvelope.isEnvelope(request) else {
            let dialect = dialects.first ?? DialectRegistry.fallback
            return summarise(request, in: bytes, as: dialect, body: (hasMark ? byteOrderMark.count : 0)..<bytes.count)
        }
        switch RequestEnvelope.read(request, in: bytes, urls: dialects.map(\.url)) {
        case .failure(let problem):
            return .failure(problem)
        case .success(let envelope):
            guard let dialect = dialects.first(where: { $0.url == envelope.url }) else {
                return .failure(RequestProblem(.unsupported, "\"url\" \"\(envelope.url)\" is not supported"))
            }
            return summarise(envelope.body, in: bytes, as: dialect, body: envelope.body.range).map { summary in
                var summary = summary
                summary.customID = envelope.customID
                summary.completionWindow = envelope.completionWindow
                return summary
            }
        }
    }

    /// A body validated as `dialect`; `body` is its range in `bytes`, which is what is sent.
    public static func summarise(_ request: RawJSON.Value, in bytes: [UInt8], as dialect: any Dialect,
                                 body: Range<Int>) -> Result<RequestSummary, RequestProblem> {
        switch dialect.summarise(request, in: bytes) {
        case .success(var summary):
            summary.dialect = dialect.id
            summary.body = body
            return .success(summary)
        case .failure(let problem):
            guard problem.line == nil else { return .failure(problem) }
            // A dialect's problem without a position is placed at the body it is about.
            let (line, column) = position(ofByte: request.range.lowerBound, in: bytes)
            return .failure(RequestProblem(problem.kind, problem.message, line: line, column: column))
        }
    }

    /// Names a value the way people call it.
    static func kindName(_ value: RawJSON.Value) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The offset of the first bracket that opens level `limit + 1`, outside strings; nil
    /// when the bytes never nest that deep. A cheap pass before the parser, which would
    /// otherwise recurse as deep as an attacker likes.
    static func firstOffset(deeperThan limit: Int, in bytes: [UInt8]) -> Int? {
        var depth = 0
        var inString = false
        var escaped = false
        for (offset, byte) in bytes.enumerated() {
            if inString {
                if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
                continue
            }
            switch byte {
            case 0x22: inString = true
            case 0x5B, 0x7B:
                depth += 1
                if depth > limit { return offset }
            case 0x5D, 0x7D: depth -= 1
            default: break
            }
        }
        return nil
    }

    /// 1-based line and column (in bytes) of a byte offset.
    public static func position(ofByte offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        for index in 0..<min(offset, bytes.count) where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        return (line, offset - lineStart + 1)
    }

    /// The offset of the first byte that breaks UTF-8, or nil when the bytes are valid.
    public static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 { index += 1; continue }
            let length: Int
            var minimum: UInt32
            var scalar: UInt32
            switch lead {
            case 0xC2...0xDF: length = 2; minimum = 0x80; scalar = UInt32(lead & 0x1F)
            case 0xE0...0xEF: length = 3; minimum = 0x800; scalar = UInt32(lead & 0x0F)
            case 0xF0...0xF4: length = 4; minimum = 0x10000; scalar = UInt32(lead & 0x07)
            default: return index
            }
            if index + length > count { return index }
            for next in 1..<length {
                let byte = bytes[index + next]
                if byte & 0xC0 != 0x80 { return index }
                scalar = scalar << 6 | UInt32(byte & 0x3F)
            }
            if scalar < minimum || scalar > 0x10FFFF || (0xD800...0xDFFF).contains(scalar) { return index }
            index += length
        }
        return nil
    }
}
