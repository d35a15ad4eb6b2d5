import Foundation

/// Chat completions: a `chat.completion`, or `chat.completion.chunk` events ending with
/// `[DONE]`.
struct StubChatAnswer: StubDialectAnswer {
    var path: String { "/chat/completions" }

    func id(_ context: StubContext) -> String { "chatcmpl-stub-\(context.fingerprint)" }

    func usage(_ context: StubContext) -> [String: Any] {
        ["prompt_tokens": context.promptTokens, "completion_tokens": context.words.count, "total_tokens": context.promptTokens + context.words.count]
    }

    func plain(_ context: StubContext) -> [String: Any] {
        ["id": id(context), "object": "chat.completion", "created": StubResponder.created, "model": context.model,
         "choices": [["index": 0, "message": ["role": "assistant", "content": context.text], "finish_reason": "stop"]],
         "usage": usage(context)]
    }

    func stream(_ context: StubContext) -> StubStream? {
        func chunk(_ choices: [[String: Any]], usage: Any? = nil) -> StubEvent {
            var object: [String: Any] = ["id": id(context), "object": "chat.completion.chunk", "created": StubResponder.created,
                                         "model": context.model, "choices": choices]
            if let usage { object["usage"] = usage }
            return .json(object)
        }
        func delta(_ text: String) -> StubEvent { chunk([["index": 0, "delta": ["content": text], "finish_reason": NSNull()]]) }
        var closing = [chunk([["index": 0, "delta": [String: Any](), "finish_reason": "stop"]])]
        if context.includeUsage { closing.append(chunk([], usage: usage(context))) }
        closing.append(.literal("[DONE]"))
        return StubStream(
            opening: [chunk([["index": 0, "delta": ["role": "assistant", "content": ""], "finish_reason": NSNull()]])],
            content: context.words.map(delta),
            closing: closing,
            error: .json(["error": ["message": "stub error inside the stream", "type": "server_error", "code": 503]]),
            endOnly: [.literal("[DONE]")],
            bulk: delta)
    }
}
