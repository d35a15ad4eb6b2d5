import LLMSpoolCore
import Foundation

/// The stub's Anthropic Messages endpoint (`POST /v1/messages`): the same deterministic
/// answer as chat, as a `message` or as the real event sequence (`message_start`,
/// `content_block_start`, `ping`, `content_block_delta` ..., `content_block_stop`,
/// `message_delta`, `message_stop`), with the fault directives in Anthropic's own forms.
/// A request's `"stub"` object may also ask the headers to be checked: `"api_key"` (the
/// `x-api-key` it must carry, and no `Authorization`) and `"anthropic_version"`.
enum StubMessages {
    /// Anthropic's error type for each status it answers with.
    static func errorType(_ status: Int) -> String {
        switch status {
        case 400: "invalid_request_error"
        case 401: "authentication_error"
        case 403: "permission_error"
        case 404: "not_found_error"
        case 413: "request_too_large"
        case 429: "rate_limit_error"
        case 529: "overloaded_error"
        default: "api_error"
        }
    }

    static func error(_ status: Int, _ message: String, latency: Int = 0) -> StubResponder.Response {
        let object: [String: Any] = ["type": "error", "error": ["type": errorType(status), "message": message]]
        return StubResponder.Response(status: status, headers: [("Content-Type", "application/json")], latencyMs: latency,
                                      pieces: [StubResponder.Piece(bytes: StubResponder.json(object), delayMs: 0)])
    }

    /// The problem with the request's headers the test asked to check, or nil.
    static func headerProblem(_ stub: [String: Any]?, headers: [String: String]) -> StubResponder.Response? {
        guard let stub else { return nil }
        if let key = stub["api_key"] as? String {
            if headers["authorization"] != nil { return error(401, "the key came as Authorization; Anthropic takes x-api-key") }
            guard headers["x-api-key"] == key else { return error(401, "invalid x-api-key") }
        }
        if let version = stub["anthropic_version"] as? String, headers["anthropic-version"] != version {
            return error(400, "anthropic-version is \(headers["anthropic-version"] ?? "missing"), expected \(version)")
        }
        return nil
    }

    static func respond(_ request: [String: Any], body: [UInt8], headers: [String: String], directives: StubDirectives,
                        fault: StubFault?, attempt: Int) -> StubResponder.Response {
        if let problem = headerProblem(request["stub"] as? [String: Any], headers: headers) { return problem }
        guard request["max_tokens"] is Int, request["messages"] is [Any] else {
            return error(400, "max_tokens: Field required; messages: Field required")
        }
        if let fault, fault.emptyBody {
            return StubResponder.Response(status: fault.status ?? 200, headers: [], latencyMs: fault.headerDelayMs, pieces: [])
        }
        if let fault, let status = fault.status {
            var response = error(status, status == 529 ? "Overloaded" : "stub answered \(status) as asked (attempt \(attempt))",
                                 latency: fault.headerDelayMs)
            if let value = fault.retryAfter { response.headers.append(("retry-after", value)) }
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
        let id = "msg_stub_\(StubResponder.fingerprint(body))"
        let inputTokens = body.count / 4 + 1
        let stream = request["stream"].map { JSONKind.isBool($0) && ($0 as? Bool) == true } ?? false
        let requestHeaders: [(String, String)] = [("request-id", "req_stub_\(attempt)")]
        if !stream {
            let message: [String: Any] = [
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [["type": "text", "text": words.joined()]],
                "stop_reason": "end_turn", "stop_sequence": NSNull(),
                "usage": ["input_tokens": inputTokens, "output_tokens": words.count,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0],
            ]
            var pieces = [StubResponder.Piece(bytes: StubResponder.json(message), delayMs: 0)]
            var abort = false
            if let cut = fault?.cutAfter ?? fault?.truncateAfter {
                let whole = pieces[0].bytes
                pieces = [StubResponder.Piece(bytes: Array(whole.prefix(min(whole.count / 2, max(cut, 1) * 8))), delayMs: 0)]
                abort = fault?.cutAfter != nil
            }
            return StubResponder.Response(status: 200, headers: [("Content-Type", "application/json")] + requestHeaders,
                                          latencyMs: latency, pieces: pieces, abortAtEnd: abort)
        }
        func event(_ type: String, _ object: [String: Any]) -> [UInt8] {
            var object = object
            object["type"] = type
            return Array("event: \(type)\ndata: ".utf8) + StubResponder.json(object) + Array("\n\n".utf8)
        }
        func piece(_ type: String, _ object: [String: Any], delay: Int = 0, repeats: Int = 1) -> StubResponder.Piece {
            StubResponder.Piece(bytes: event(type, object), delayMs: delay, repeats: repeats)
        }
        func textDelta(_ text: String) -> [String: Any] {
            ["index": 0, "delta": ["type": "text_delta", "text": text]]
        }
        let start: [String: Any] = ["message": [
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [Any](),
            "stop_reason": NSNull(), "stop_sequence": NSNull(),
            "usage": ["input_tokens": inputTokens, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0],
        ]]
        if fault?.doneOnly == true {
            // Nothing but the end: no message ever started.
            return StubResponder.Response(status: 200, headers: [("Content-Type", "text/event-stream")], latencyMs: latency,
                                          pieces: [piece("message_stop", [:])])
        }
        var pieces = [
            piece("message_start", start),
            piece("content_block_start", ["index": 0, "content_block": ["type": "text", "text": ""]]),
            piece("ping", [:]),
        ]
        var outputTokens = words.count
        let cutting = fault?.cutAfter != nil
        if directives.bulkBytes > 0 {
            // One 16 KiB text delta, repeated until the stream holds bulk_bytes.
            let chunk = event("content_block_delta", textDelta(String(repeating: "abcdefghijklmnop", count: 1024)))
            let repeats = max(1, directives.bulkBytes / chunk.count)
            pieces.append(StubResponder.Piece(bytes: chunk, delayMs: 0, repeats: repeats))
            outputTokens = repeats * 4096
        } else {
            if let fault, fault.stallMs > 0 {
                // Anthropic's keep-alive is a ping event: data that carries no content.
                for _ in 0..<max(1, fault.stallMs / fault.keepaliveMs) {
                    pieces.append(StubResponder.Piece(bytes: event("ping", [:]), delayMs: fault.keepaliveMs))
                }
            }
            for (index, word) in words.enumerated() {
                pieces.append(piece("content_block_delta", textDelta(word), delay: directives.tokenDelayMs))
                if index == 0, fault?.errorInStream == true {
                    pieces.append(piece("error", ["error": ["type": "overloaded_error", "message": "Overloaded"]]))
                }
            }
        }
        if !(cutting && directives.bulkBytes > 0) {
            pieces.append(piece("content_block_stop", ["index": 0]))
            pieces.append(piece("message_delta", ["delta": ["stop_reason": "end_turn", "stop_sequence": NSNull()],
                                                  "usage": ["output_tokens": outputTokens]]))
            pieces.append(piece("message_stop", [:]))
        }
        var abort = cutting && directives.bulkBytes > 0
        if directives.bulkBytes == 0 {
            if let cut = fault?.cutAfter {
                pieces = Array(pieces.prefix(max(1, cut)))
                abort = true
            } else if let cut = fault?.truncateAfter {
                pieces = Array(pieces.prefix(max(1, cut)))
            }
        }
        return StubResponder.Response(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")] + requestHeaders,
                                      latencyMs: latency, pieces: pieces, abortAtEnd: abort)
    }
}
