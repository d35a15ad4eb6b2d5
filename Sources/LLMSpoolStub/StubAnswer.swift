import LLMSpoolCore
import Foundation

/// The stub's deterministic answer to a request, so tests can compute what they expect.
public enum StubAnswer {
    /// The pieces the answer streams in; their concatenation is the whole content. The
    /// first echoes the last user message; the rest carry a non-ASCII letter so that
    /// UTF-8 split across reads is exercised.
    public static func pieces(prompt: String, tokens: Int) -> [String] {
        var pieces = ["Echo: \(prompt)"]
        if tokens > 1 {
            for index in 1..<tokens { pieces.append(" tök\(index)") }
        }
        return pieces
    }

    public static func content(prompt: String, tokens: Int) -> String {
        pieces(prompt: prompt, tokens: tokens).joined()
    }

    /// The text the answer echoes: the last user message of chat (string content or the
    /// text parts of an array) or of a Responses `input`, a completion's `prompt` (the
    /// first, of several), an embedding's `input` (the first).
    public static func prompt(of request: [String: Any]) -> String {
        if let messages = request["messages"] as? [Any] { return lastUserText(messages) }
        for key in ["prompt", "input"] {
            if let text = request[key] as? String { return text }
            guard let list = request[key] as? [Any] else { continue }
            if let first = list.first as? String { return first }
            return lastUserText(list)
        }
        return ""
    }

    private static func lastUserText(_ messages: [Any]) -> String {
        for case let message as [String: Any] in messages.reversed() where (message["role"] as? String) == "user" {
            if let text = message["content"] as? String { return text }
            if let parts = message["content"] as? [Any] {
                return parts.compactMap { ($0 as? [String: Any])?["text"] as? String }.joined()
            }
        }
        return ""
    }
}
