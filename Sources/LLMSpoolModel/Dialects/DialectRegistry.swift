/// The request dialects the daemon speaks. A new dialect adds its files and one line to
/// `all`; the intake, the engine and the judge find it here by the id its summary carries.
public enum DialectRegistry {
    /// Every dialect. The first is the fallback: a bare request (no envelope naming a
    /// `url`) is validated as it.
    public static let all: [any Dialect] = [
        ChatCompletionsDialect(),
        ResponsesDialect(),
        CompletionsDialect(),
        EmbeddingsDialect(),
        MessagesDialect(),
    ]

    /// The dialect of a request nothing else claims, and of summaries made before dialects.
    public static var fallback: any Dialect { all[0] }

    /// The dialect of this id, or nil when none is registered under it.
    public static func dialect(id: String) -> (any Dialect)? {
        all.first { $0.id == id }
    }

    /// The dialect a summary was validated as. Summaries are only made by the validator,
    /// which names registered dialects; anything else gets the fallback rather than a trap.
    public static func dialect(for summary: RequestSummary) -> any Dialect {
        dialect(id: summary.dialect) ?? fallback
    }

    /// The dialect an envelope's `url` names, or nil when none is registered under it.
    public static func dialect(url: String) -> (any Dialect)? {
        all.first { $0.url == url }
    }

    /// The urls an envelope may name, in registration order.
    public static var urls: [String] { all.map(\.url) }
}
