/// Reads the human message and the status code out of an OpenAI-shaped error body.
public enum ProviderError {
    public static func message(in object: [String: Any]) -> String? {
        if let error = object["error"] as? [String: Any] { return error["message"] as? String }
        return object["error"] as? String
    }

    /// `error.message`, or `error` itself when it is a string; nil when the body says neither.
    public static func message(inBody bytes: [UInt8]) -> String? {
        guard let root = RawJSON.valueIfJSON(bytes), let error = root["error"] else { return nil }
        if case .object = error { return error["message"].flatMap { RawJSON.string($0, in: bytes) } }
        return RawJSON.string(error, in: bytes)
    }

    /// `error.message` alone, nil when `error` is not an object: an error answer of the
    /// Batches and Message Batches APIs, whose `error` is always one.
    public static func objectMessage(inBody bytes: [UInt8]) -> String? {
        guard let root = RawJSON.valueIfJSON(bytes), let error = root["error"], case .object = error else { return nil }
        return error["message"].flatMap { RawJSON.string($0, in: bytes) }
    }

    /// `error.type` (Anthropic's `overloaded_error`, OpenAI's `server_error`), when the body has one.
    public static func errorType(inBody bytes: [UInt8]) -> String? {
        guard let root = RawJSON.valueIfJSON(bytes), let error = root["error"], case .object = error else { return nil }
        return error["type"].flatMap { RawJSON.string($0, in: bytes) }
    }

    /// The status code an error body carries in `error.code` or `error.status`, as a number
    /// or a numeric string. Numbers past Int's range are no status code.
    public static func embeddedCode(inBody bytes: [UInt8]) -> Int? {
        guard let root = RawJSON.valueIfJSON(bytes), let error = root["error"], case .object = error else { return nil }
        for key in ["code", "status"] {
            switch error[key] {
            case .number(let range)?:
                if let number = Int(String(decoding: bytes[range], as: UTF8.self)) { return number }
            case .string?:
                if let text = error[key].flatMap({ RawJSON.string($0, in: bytes) }), let number = Int(text) { return number }
            default:
                continue
            }
        }
        return nil
    }
}
