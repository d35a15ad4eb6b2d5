import Foundation

/// The Responses API: a `response` object, or its typed events in the API's order, each
/// with its `event:` line and `sequence_number`: `response.created`,
/// `response.in_progress`, `response.output_item.added`, `response.content_part.added`,
/// the `response.output_text.delta`s, `response.output_text.done`,
/// `response.content_part.done`, `response.output_item.done`, `response.completed`.
struct StubResponsesAnswer: StubDialectAnswer {
    var path: String { "/responses" }

    func id(_ context: StubContext) -> String { "resp_stub\(context.fingerprint)" }
    func itemID(_ context: StubContext) -> String { "msg_stub\(context.fingerprint)" }

    func usage(_ context: StubContext) -> [String: Any] {
        ["input_tokens": context.promptTokens, "input_tokens_details": ["cached_tokens": 0, "cache_write_tokens": 0],
         "output_tokens": context.words.count, "output_tokens_details": ["reasoning_tokens": 0],
         "total_tokens": context.promptTokens + context.words.count]
    }

    func part(_ text: String) -> [String: Any] { ["type": "output_text", "text": text, "annotations": [Any]()] }

    func message(_ context: StubContext, text: String?, status: String) -> [String: Any] {
        ["id": itemID(context), "type": "message", "role": "assistant", "status": status,
         "content": text.map { [part($0)] } ?? [Any]()]
    }

    /// The response as it stands: in progress with no output, or completed with the text.
    func response(_ context: StubContext, completed: Bool) -> [String: Any] {
        var object: [String: Any] = [
            "id": id(context), "object": "response", "created_at": StubResponder.created, "model": context.model,
            "status": completed ? "completed" : "in_progress", "error": NSNull(), "incomplete_details": NSNull(),
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": [Any](), "temperature": 1.0, "top_p": 1.0,
            "text": ["format": ["type": "text"]], "truncation": "disabled", "metadata": [String: Any](),
        ]
        let instructions: Any = (context.request["instructions"] as? String) ?? NSNull()
        let budget: Any = (context.request["max_output_tokens"] as? Int) ?? NSNull()
        object["instructions"] = instructions
        object["max_output_tokens"] = budget
        object["output"] = completed ? [message(context, text: context.text, status: "completed")] : [Any]()
        object["usage"] = completed ? usage(context) : NSNull()
        if completed { object["completed_at"] = StubResponder.created }
        return object
    }

    func plain(_ context: StubContext) -> [String: Any] { response(context, completed: true) }

    func stream(_ context: StubContext) -> StubStream? {
        func event(_ type: String, _ members: [String: Any]) -> StubEvent {
            .json(members.merging(["type": type]) { _, new in new }, name: type)
        }
        let item = itemID(context)
        let position: [String: Any] = ["item_id": item, "output_index": 0, "content_index": 0]
        func delta(_ text: String) -> StubEvent {
            event("response.output_text.delta", position.merging(["delta": text, "logprobs": [Any]()]) { $1 })
        }
        return StubStream(
            opening: [
                event("response.created", ["response": response(context, completed: false)]),
                event("response.in_progress", ["response": response(context, completed: false)]),
                event("response.output_item.added", ["output_index": 0, "item": message(context, text: nil, status: "in_progress")]),
                event("response.content_part.added", position.merging(["part": part("")]) { $1 }),
            ],
            content: context.words.map(delta),
            closing: [
                event("response.output_text.done", position.merging(["text": context.text, "logprobs": [Any]()]) { $1 }),
                event("response.content_part.done", position.merging(["part": part(context.text)]) { $1 }),
                event("response.output_item.done", ["output_index": 0, "item": message(context, text: context.text, status: "completed")]),
                event("response.completed", ["response": response(context, completed: true)]),
            ],
            error: event("error", ["code": "server_error", "message": "stub error inside the stream", "param": NSNull()]),
            // An end in chat's form, which is no end of a Responses stream.
            endOnly: [.literal("[DONE]")],
            bulk: delta,
            numbered: true)
    }
}
