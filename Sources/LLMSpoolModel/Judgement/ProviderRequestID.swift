/// The provider's id of one request, from an answer's headers (lowercased names): OpenAI's
/// `x-request-id`, Anthropic's `request-id`; a batch line's `request_id` reaches it as
/// `x-request-id`. Kept short and printable, since the value comes from the network. Pure.
public enum ProviderRequestID {
    /// Longest id kept; real ones are under 64 characters.
    public static let limit = 200

    /// nil also when the id holds a configured key (`redaction`): a provider or a proxy that
    /// echoes the key it was sent as the request's id would otherwise write it to the task
    /// record, the failure record, `show` and a batch's output line.
    public static func from(headers: [String: String], redaction: SecretRedaction = SecretRedaction()) -> String? {
        guard let raw = headers["x-request-id"] ?? headers["request-id"] else { return nil }
        let value = TextEscaping.trimmed(raw)
        guard !value.isEmpty, value.utf8.count <= limit, value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
              redaction.redact(value) == value else { return nil }
        return value
    }
}
