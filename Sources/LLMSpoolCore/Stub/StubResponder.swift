import Foundation

/// The HTTP-free half of the stub: a request body in, a response (status, content type,
/// body pieces with delays) out.
public struct StubResponder: Sendable {
    /// One response; `pieces` are sent in order, each after its delay.
    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var latencyMs: Int
        public var pieceDelayMs: Int
        public var pieces: [[UInt8]]
    }

    public static let created = 1_700_000_000

    public let defaults: StubDirectives

    public init(defaults: StubDirectives) {
        self.defaults = defaults
    }

    public func respond(method: String, path: String, body: [UInt8]) -> Response {
        if method == "GET" && path == "/healthz" {
            return Response(status: 200, contentType: "text/plain", latencyMs: 0, pieceDelayMs: 0, pieces: [Array("ok\n".utf8)])
        }
        guard path.hasSuffix("/chat/completions") else {
            return error(404, "no route for \(method) \(path)", latency: 0)
        }
        guard method == "POST" else { return error(405, "use POST", latency: 0) }
        guard let request = JSONObject.parse(body) else {
            return error(400, "the request body is not a JSON object", latency: 0)
        }
        let directives = defaults.overridden(by: request)
        guard directives.status == 200 else {
            return error(directives.status, "stub answered \(directives.status) as asked", latency: directives.latencyMs)
        }
        let model = (request["model"] as? String) ?? "stub"
        let pieces = StubAnswer.pieces(prompt: StubAnswer.prompt(of: request), tokens: directives.tokens)
        let id = "chatcmpl-stub-\(StubResponder.fingerprint(body))"
        let promptTokens = body.count / 4 + 1
        let usage: [String: Any] = ["prompt_tokens": promptTokens, "completion_tokens": pieces.count, "total_tokens": promptTokens + pieces.count]
        let stream = (request["stream"] as? Bool) == true && JSONKind.isBool(request["stream"]!)
        if !stream {
            let object: [String: Any] = [
                "id": id, "object": "chat.completion", "created": StubResponder.created, "model": model,
                "choices": [["index": 0, "message": ["role": "assistant", "content": pieces.joined()], "finish_reason": "stop"]],
                "usage": usage,
            ]
            return Response(status: 200, contentType: "application/json", latencyMs: directives.latencyMs,
                            pieceDelayMs: 0, pieces: [StubResponder.json(object)])
        }
        func chunk(_ choices: [[String: Any]], usage: Any? = nil) -> [UInt8] {
            var object: [String: Any] = ["id": id, "object": "chat.completion.chunk", "created": StubResponder.created, "model": model, "choices": choices]
            if let usage { object["usage"] = usage }
            return Array("data: ".utf8) + StubResponder.json(object) + Array("\n\n".utf8)
        }
        var events: [[UInt8]] = [chunk([["index": 0, "delta": ["role": "assistant", "content": ""], "finish_reason": NSNull()]])]
        for piece in pieces {
            events.append(chunk([["index": 0, "delta": ["content": piece], "finish_reason": NSNull()]]))
        }
        events.append(chunk([["index": 0, "delta": [String: Any](), "finish_reason": "stop"]]))
        if let options = request["stream_options"] as? [String: Any], (options["include_usage"] as? Bool) == true {
            events.append(chunk([], usage: usage))
        }
        events.append(Array("data: [DONE]\n\n".utf8))
        return Response(status: 200, contentType: "text/event-stream", latencyMs: directives.latencyMs,
                        pieceDelayMs: directives.tokenDelayMs, pieces: events)
    }

    private func error(_ status: Int, _ message: String, latency: Int) -> Response {
        let object: [String: Any] = ["error": ["message": message, "type": "stub_error", "code": status]]
        return Response(status: status, contentType: "application/json", latencyMs: latency, pieceDelayMs: 0, pieces: [StubResponder.json(object)])
    }

    static func json(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// FNV-1a of the body: a stable id for a stable request.
    static func fingerprint(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100000001b3
        }
        return String(hash, radix: 16)
    }
}
