/// The request dialects the daemon speaks. A new dialect adds its files and one line to
/// `all`; the intake, the engine and the judge find it here by the id its summary carries.
public enum DialectRegistry {
    /// Every dialect, in the order they are asked to recognise a request. The first is
    /// the fallback: a request no dialect recognises is validated (and refused) as it.
    public static let all: [any Dialect] = [
        ChatCompletionsDialect(),
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

    /// The dialect a parsed request belongs to, among `dialects`.
    static func dialect(recognising request: RawJSON.Value, in bytes: [UInt8], among dialects: [any Dialect]) -> any Dialect {
        if dialects.count == 1 { return dialects[0] }
        return dialects.first { $0.recognises(request, in: bytes) } ?? dialects.first ?? fallback
    }
}
