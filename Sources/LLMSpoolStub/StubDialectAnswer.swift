import LLMSpoolCore
import Foundation

/// One dialect's answers in the stub: its plain object and the events of its stream, built
/// from what every dialect shares (`StubContext`). The faults are applied around these by
/// `StubResponder`, the same way for every dialect.
protocol StubDialectAnswer: Sendable {
    /// The path suffix the dialect is served under (after the base URL).
    var path: String { get }
    /// The answer of a plain call.
    func plain(_ context: StubContext) -> [String: Any]
    /// The events of a streamed answer; nil for a dialect that never streams, whose
    /// `"stream": true` is answered plain.
    func stream(_ context: StubContext) -> StubStream?
}

/// What an answer is made of: the request, its deterministic words and counts.
struct StubContext {
    let request: [String: Any]
    let body: [UInt8]
    let model: String
    /// The pieces of the answer's text (`StubAnswer.pieces`).
    let words: [String]
    /// FNV-1a of the body: ids are stable for a stable request.
    let fingerprint: String
    let promptTokens: Int

    var text: String { words.joined() }

    var includeUsage: Bool {
        ((request["stream_options"] as? [String: Any])?["include_usage"] as? Bool) == true
    }
}

/// One event of a stream: its JSON data and, for typed streams, its `event:` name.
struct StubEvent {
    var name: String?
    var object: [String: Any]?
    /// Sent as it is, instead of a JSON object (`[DONE]`).
    var raw: String?

    static func json(_ object: [String: Any], name: String? = nil) -> StubEvent { StubEvent(name: name, object: object) }
    static func literal(_ text: String) -> StubEvent { StubEvent(raw: text) }
}

/// A stream in three parts, so that the faults can go where they belong: a cut or a stall
/// after the first event, an error after the first piece of text.
struct StubStream {
    var opening: [StubEvent]
    /// One event for each of the context's words.
    var content: [StubEvent]
    var closing: [StubEvent]
    /// The error event of `error_in_stream`, in the dialect's own form.
    var error: StubEvent
    /// A stream of nothing but its end (`done_only`).
    var endOnly: [StubEvent]
    /// A content event carrying `text` (the benchmarks' bulk streams).
    var bulk: (String) -> StubEvent
    /// Events carry a `sequence_number` counting from 0 (the Responses API).
    var numbered = false
}
