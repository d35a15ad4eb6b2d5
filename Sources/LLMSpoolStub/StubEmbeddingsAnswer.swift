import Foundation

/// Embeddings: a `list` of one `embedding` per input, of deterministic numbers (as many as
/// the request's `dimensions`, 8 by default). The API does not stream.
struct StubEmbeddingsAnswer: StubDialectAnswer {
    var path: String { "/embeddings" }

    /// The inputs: one string, or each element of an array (token arrays as their text).
    static func inputs(_ request: [String: Any]) -> [String] {
        if let text = request["input"] as? String { return [text] }
        return ((request["input"] as? [Any]) ?? []).map { ($0 as? String) ?? "\($0)" }
    }

    func plain(_ context: StubContext) -> [String: Any] {
        let dimensions = max(1, min((context.request["dimensions"] as? Int) ?? 8, 4096))
        let data = Self.inputs(context.request).enumerated().map { index, text -> [String: Any] in
            var seed = UInt64(text.utf8.reduce(5381) { ($0 &* 33) ^ Int($1) } & 0xFFFF_FFFF)
            let vector = (0..<dimensions).map { _ -> Double in
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                return Double(Int(seed >> 40) % 2000 - 1000) / 1000
            }
            return ["object": "embedding", "index": index, "embedding": vector]
        }
        return ["object": "list", "data": data, "model": context.model,
                "usage": ["prompt_tokens": context.promptTokens, "total_tokens": context.promptTokens]]
    }

    func stream(_ context: StubContext) -> StubStream? { nil }
}
