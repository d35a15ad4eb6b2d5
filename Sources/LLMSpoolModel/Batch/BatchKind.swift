/// The two batch line shapes a file may hold; one kind per file.
public enum BatchKind: String, Sendable, Equatable {
    /// OpenAI's Batch input line: `{"custom_id", "method", "url", "body"}`.
    case openai
    /// Anthropic's Message Batches request: `{"custom_id", "params"}`, `params` a Messages body.
    case anthropic

    /// How people call a line of this kind, in messages.
    public var lineName: String {
        switch self {
        case .openai: "an OpenAI batch line (custom_id, method, url, body)"
        case .anthropic: "an Anthropic batch line (custom_id, params)"
        }
    }
}
