import Foundation

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

    public init(model: String, stream: Bool, size: Int, estimatedTokens: Int = 0, usageSplice: Int? = nil) {
        self.model = model
        self.stream = stream
        self.size = size
        self.estimatedTokens = estimatedTokens
        self.usageSplice = usageSplice
    }
}

/// Checks that a request is a UTF-8 JSON object with `model` and `messages`, before anything
/// is sent. Pure: bytes in, verdict out.
public enum RequestValidator {
    /// The deepest nesting a request may have.
    public static let defaultMaxDepth = 64

    public static func validate(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) -> Result<RequestSummary, RequestProblem> {
        if bytes.isEmpty { return .failure(RequestProblem(.invalidJSON, "the file is empty")) }
        if let bad = firstInvalidUTF8(bytes) {
            let (line, column) = position(ofByte: bad, in: bytes)
            return .failure(RequestProblem(.notUTF8, "the file is not UTF-8 (invalid byte at offset \(bad))", line: line, column: column))
        }
        if let deep = firstOffset(deeperThan: maxDepth, in: bytes) {
            let (line, column) = position(ofByte: deep, in: bytes)
            return .failure(RequestProblem(.tooDeep, "the request nests deeper than \(maxDepth) levels", line: line, column: column))
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            return .failure(jsonProblem(error, bytes))
        }
        guard let request = object as? [String: Any] else {
            return .failure(RequestProblem(.notAnObject, "the request must be a JSON object, not \(JSONKind.name(of: object))"))
        }
        guard let modelValue = request["model"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"model\""))
        }
        guard let model = modelValue as? String, !JSONKind.isBool(modelValue), !model.isEmpty else {
            return .failure(RequestProblem(.wrongType, "\"model\" must be a non-empty string, not \(JSONKind.name(of: modelValue))"))
        }
        guard let messages = request["messages"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"messages\""))
        }
        guard messages is [Any] else {
            return .failure(RequestProblem(.wrongType, "\"messages\" must be an array, not \(JSONKind.name(of: messages))"))
        }
        var stream = false
        if let value = request["stream"], !(value is NSNull) {
            guard JSONKind.isBool(value), let flag = value as? Bool else {
                return .failure(RequestProblem(.wrongType, "\"stream\" must be true or false, not \(JSONKind.name(of: value))"))
            }
            stream = flag
        }
        var splice: Int?
        if stream && request["stream_options"] == nil {
            // The object has members (model, messages), so a member and a comma can go
            // right after its brace without reading or rewriting the rest.
            splice = bytes.firstIndex(of: UInt8(ascii: "{"))
        }
        return .success(RequestSummary(model: model, stream: stream, size: bytes.count,
                                       estimatedTokens: estimateTokens(request, messages: messages as? [Any] ?? []),
                                       usageSplice: splice))
    }

    /// A rough count, enough for a token bucket: four characters a token, plus the
    /// completion budget the request asks for.
    static func estimateTokens(_ request: [String: Any], messages: [Any]) -> Int {
        var characters = 0
        for case let message as [String: Any] in messages {
            if let text = message["content"] as? String {
                characters += text.utf8.count
            } else if let parts = message["content"] as? [Any] {
                for case let part as [String: Any] in parts {
                    characters += (part["text"] as? String)?.utf8.count ?? 0
                }
            }
        }
        let budget = (request["max_completion_tokens"] as? Int) ?? (request["max_tokens"] as? Int) ?? 0
        // Clamped: a request may name any number, and the sum must not overflow.
        return characters / 4 + 1 + min(max(0, budget), 1 << 40)
    }

    /// Foundation reports "around character N"; people want a line and a column.
    static func jsonProblem(_ error: Error, _ bytes: [UInt8]) -> RequestProblem {
        let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
        var offset = bytes.count
        if let range = detail.range(of: #"character (\d+)"#, options: .regularExpression) {
            let digits = detail[range].split(separator: " ").last.flatMap { Int($0) }
            offset = min(digits ?? offset, bytes.count)
        }
        let (line, column) = position(ofByte: offset, in: bytes)
        let reason = detail.hasSuffix(".") ? String(detail.dropLast()) : detail
        return RequestProblem(.invalidJSON, "the file is not valid JSON: \(reason)", line: line, column: column)
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
    static func position(ofByte offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        for index in 0..<min(offset, bytes.count) where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        return (line, offset - lineStart + 1)
    }

    /// The offset of the first byte that breaks UTF-8, or nil when the bytes are valid.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
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

/// Names JSON values the way people call them, and tells Foundation's booleans from numbers.
enum JSONKind {
    static func isBool(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        // Foundation parses JSON booleans into NSNumbers of ObjC type "c" (char).
        return String(cString: number.objCType) == "c"
    }

    static func name(of value: Any) -> String {
        if value is NSNull { return "null" }
        if isBool(value) { return "a boolean" }
        if value is NSNumber { return "a number" }
        if value is String { return "a string" }
        if value is [Any] { return "an array" }
        if value is [String: Any] { return "an object" }
        return "\(type(of: value))"
    }
}
