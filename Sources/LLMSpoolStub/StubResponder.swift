import LLMSpoolCore
import Foundation

/// The HTTP-free half of the stub: a request body and its attempt number in, a response
/// (status, headers, pieces with delays, how it ends) out.
public struct StubResponder: Sendable {
    /// One piece of a response body, sent after its delay.
    public struct Piece: Sendable {
        public var bytes: [UInt8]
        public var delayMs: Int
        /// Sent this many times in a row: a huge answer without holding it in memory.
        public var repeats = 1

        public init(bytes: [UInt8], delayMs: Int, repeats: Int = 1) {
            self.bytes = bytes
            self.delayMs = delayMs
            self.repeats = repeats
        }
    }

    /// One response.
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var latencyMs: Int
        public var pieces: [Piece]
        /// Drop the connection after the last piece instead of ending the body.
        public var abortAtEnd = false

        public var body: [UInt8] { pieces.flatMap { piece in (0..<piece.repeats).flatMap { _ in piece.bytes } } }
    }

    public static let created = 1_700_000_000

    public let defaults: StubDirectives

    public init(defaults: StubDirectives) {
        self.defaults = defaults
    }

    /// `attempt` counts from 1 for each distinct request body; `headers` are the request's
    /// (lower-case names) that a dialect may check.
    public func respond(method: String, path: String, body: [UInt8], attempt: Int = 1, headers: [String: String] = [:]) -> Response {
        if method == "GET" && path == "/healthz" {
            return Response(status: 200, headers: [("Content-Type", "text/plain")], latencyMs: 0, pieces: [Piece(bytes: Array("ok\n".utf8), delayMs: 0)])
        }
        let messages = path.hasSuffix("/v1/messages")
        guard messages || path.hasSuffix("/chat/completions") else {
            return error(404, "no route for \(method) \(path)")
        }
        guard method == "POST" else { return error(405, "use POST") }
        guard let request = JSONObject.parse(body) else {
            return error(400, "the request body is not a JSON object")
        }
        let directives = defaults.overridden(by: request)
        let fault = attempt <= directives.faults.count ? directives.faults[attempt - 1] : nil
        var response = messages
            ? StubMessages.respond(request, body: body, headers: headers, directives: directives, fault: fault, attempt: attempt)
            : answer(request, body: body, directives: directives, fault: fault, attempt: attempt)
        response.headers += fault?.headers ?? []
        return response
    }

    private func answer(_ request: [String: Any], body: [UInt8], directives: StubDirectives, fault: StubFault?, attempt: Int) -> Response {
        if let fault, fault.emptyBody {
            return Response(status: fault.status ?? 200, headers: [], latencyMs: fault.headerDelayMs, pieces: [])
        }
        if let fault, let status = fault.status {
            var response = error(status, "stub answered \(status) as asked (attempt \(attempt))", latency: fault.headerDelayMs)
            if let value = fault.retryAfter { response.headers.append(("Retry-After", value)) }
            if let value = fault.retryAfterMs { response.headers.append(("retry-after-ms", value)) }
            if let value = fault.shouldRetry { response.headers.append(("x-should-retry", value)) }
            return response
        }
        guard directives.status == 200 else {
            return error(directives.status, "stub answered \(directives.status) as asked", latency: directives.latencyMs)
        }
        let latency = directives.latencyMs + (fault?.headerDelayMs ?? 0)
        let model = (request["model"] as? String) ?? "stub"
        let words = StubAnswer.pieces(prompt: StubAnswer.prompt(of: request), tokens: directives.tokens)
        let id = "chatcmpl-stub-\(StubResponder.fingerprint(body))"
        let promptTokens = body.count / 4 + 1
        let usage: [String: Any] = ["prompt_tokens": promptTokens, "completion_tokens": words.count, "total_tokens": promptTokens + words.count]
        let stream = request["stream"].map { JSONKind.isBool($0) && ($0 as? Bool) == true } ?? false
        if !stream {
            let object: [String: Any] = [
                "id": id, "object": "chat.completion", "created": StubResponder.created, "model": model,
                "choices": [["index": 0, "message": ["role": "assistant", "content": words.joined()], "finish_reason": "stop"]],
                "usage": usage,
            ]
            var pieces = [Piece(bytes: StubResponder.json(object), delayMs: 0)]
            var abort = false
            if let cut = fault?.cutAfter ?? fault?.truncateAfter {
                // A plain answer cut short: half of it, then the end.
                let whole = pieces[0].bytes
                pieces = [Piece(bytes: Array(whole.prefix(min(whole.count / 2, max(cut, 1) * 8))), delayMs: 0)]
                abort = fault?.cutAfter != nil
            }
            return Response(status: 200, headers: [("Content-Type", "application/json")], latencyMs: latency, pieces: pieces, abortAtEnd: abort)
        }
        func event(_ choices: [[String: Any]], usage: Any? = nil) -> [UInt8] {
            var object: [String: Any] = ["id": id, "object": "chat.completion.chunk", "created": StubResponder.created, "model": model, "choices": choices]
            if let usage { object["usage"] = usage }
            return Array("data: ".utf8) + StubResponder.json(object) + Array("\n\n".utf8)
        }
        if fault?.doneOnly == true {
            return Response(status: 200, headers: [("Content-Type", "text/event-stream")], latencyMs: latency,
                            pieces: [Piece(bytes: Array("data: [DONE]\n\n".utf8), delayMs: 0)])
        }
        let delay = directives.tokenDelayMs
        var pieces = [Piece(bytes: event([["index": 0, "delta": ["role": "assistant", "content": ""], "finish_reason": NSNull()]]), delayMs: 0)]
        if directives.bulkBytes > 0 {
            // One 16 KiB content event, repeated until the stream holds bulk_bytes.
            let text = String(repeating: "abcdefghijklmnop", count: 1024)
            let chunk = event([["index": 0, "delta": ["content": text], "finish_reason": NSNull()]])
            pieces.append(Piece(bytes: chunk, delayMs: 0, repeats: max(1, directives.bulkBytes / chunk.count)))
            // A cut fault sends all the text, then drops the connection before the end.
            let cut = fault?.cutAfter != nil
            if !cut {
                pieces.append(Piece(bytes: event([["index": 0, "delta": [String: Any](), "finish_reason": "stop"]]), delayMs: 0))
                pieces.append(Piece(bytes: Array("data: [DONE]\n\n".utf8), delayMs: 0))
            }
            return Response(status: 200, headers: [("Content-Type", "text/event-stream")], latencyMs: latency, pieces: pieces, abortAtEnd: cut)
        }
        if let fault, fault.stallMs > 0 {
            for _ in 0..<max(1, fault.stallMs / fault.keepaliveMs) {
                pieces.append(Piece(bytes: Array(": keep-alive\n\n".utf8), delayMs: fault.keepaliveMs))
            }
        }
        for (index, word) in words.enumerated() {
            pieces.append(Piece(bytes: event([["index": 0, "delta": ["content": word], "finish_reason": NSNull()]]), delayMs: delay))
            if index == 0, fault?.errorInStream == true {
                pieces.append(Piece(bytes: Array(#"data: {"error":{"message":"stub error inside the stream","type":"server_error","code":503}}"#.utf8) + Array("\n\n".utf8), delayMs: 0))
            }
        }
        // The finish follows the last token at once: N tokens at D ms hold a stream N x D ms.
        pieces.append(Piece(bytes: event([["index": 0, "delta": [String: Any](), "finish_reason": "stop"]]), delayMs: 0))
        if let options = request["stream_options"] as? [String: Any], (options["include_usage"] as? Bool) == true {
            pieces.append(Piece(bytes: event([], usage: usage), delayMs: 0))
        }
        pieces.append(Piece(bytes: Array("data: [DONE]\n\n".utf8), delayMs: 0))
        var abort = false
        if let cut = fault?.cutAfter {
            pieces = Array(pieces.prefix(max(1, cut)))
            abort = true
        } else if let cut = fault?.truncateAfter {
            pieces = Array(pieces.prefix(max(1, cut)))
        }
        return Response(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")],
                        latencyMs: latency, pieces: pieces, abortAtEnd: abort)
    }

    private func error(_ status: Int, _ message: String, latency: Int = 0) -> Response {
        let object: [String: Any] = ["error": ["message": message, "type": "stub_error", "code": status]]
        return Response(status: status, headers: [("Content-Type", "application/json")], latencyMs: latency,
                        pieces: [Piece(bytes: StubResponder.json(object), delayMs: 0)])
    }

    static func json(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// FNV-1a of the body: a stable id for a stable request.
    public static func fingerprint(_ bytes: [UInt8]) -> String { Fingerprint.fnv1a(bytes) }
}
