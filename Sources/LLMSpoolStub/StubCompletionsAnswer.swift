import Foundation

/// Legacy completions: a `text_completion`, or `text_completion` chunks of text ending
/// with `[DONE]`, as vLLM and OpenAI send them.
struct StubCompletionsAnswer: StubDialectAnswer {
    var path: String { "/completions" }

    func id(_ context: StubContext) -> String { "cmpl-stub-\(context.fingerprint)" }

    func usage(_ context: StubContext) -> [String: Any] {
        ["prompt_tokens": context.promptTokens, "completion_tokens": context.words.count, "total_tokens": context.promptTokens + context.words.count]
    }

    func object(_ context: StubContext, _ choices: [[String: Any]]) -> [String: Any] {
        ["id": id(context), "object": "text_completion", "created": StubResponder.created, "model": context.model, "choices": choices]
    }

    func plain(_ context: StubContext) -> [String: Any] {
        var answer = object(context, [["index": 0, "text": context.text, "logprobs": NSNull(), "finish_reason": "stop"]])
        answer["usage"] = usage(context)
        return answer
    }

    func stream(_ context: StubContext) -> StubStream? {
        func piece(_ text: String, finish: Any = NSNull()) -> StubEvent {
            .json(object(context, [["index": 0, "text": text, "logprobs": NSNull(), "finish_reason": finish]]))
        }
        var closing = [piece("", finish: "stop")]
        if context.includeUsage {
            var last = object(context, [])
            last["usage"] = usage(context)
            closing.append(.json(last))
        }
        closing.append(.literal("[DONE]"))
        return StubStream(
            opening: [],
            content: context.words.map { piece($0) },
            closing: closing,
            error: .json(["error": ["message": "stub error inside the stream", "type": "server_error", "code": 503]]),
            endOnly: [.literal("[DONE]")],
            bulk: { piece($0) })
    }
}
