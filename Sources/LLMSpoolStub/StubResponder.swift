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

    /// A refusal that repeats the key the call carried (the bearer token, or the Messages API's
    /// x-api-key), as a provider rejecting a key does.
    static func keyEcho(_ headers: [String: String]) -> String {
        let key = headers["authorization"].map { $0.replacingOccurrences(of: "Bearer ", with: "") } ?? headers["x-api-key"] ?? ""
        return "Incorrect API key provided: \(key). You can find your API key in your account."
    }

    public let defaults: StubDirectives

    public init(defaults: StubDirectives) {
        self.defaults = defaults
    }

    /// The dialects the stub speaks, found by the end of the path. Chat comes before
    /// completions, whose path ends chat's too. Anthropic Messages is `StubMessages`.
    static let dialects: [any StubDialectAnswer] = [
        StubChatAnswer(), StubResponsesAnswer(), StubCompletionsAnswer(), StubEmbeddingsAnswer(),
    ]

    /// `attempt` counts from 1 for each distinct request body; `headers` are the request's
    /// (lower-case names) that a dialect may check.
    public func respond(method: String, path: String, body: [UInt8], attempt: Int = 1, headers: [String: String] = [:]) -> Response {
        if method == "GET" && path == "/healthz" {
            return Response(status: 200, headers: [("Content-Type", "text/plain")], latencyMs: 0, pieces: [Piece(bytes: Array("ok\n".utf8), delayMs: 0)])
        }
        let messages = path.hasSuffix("/v1/messages")
        let dialect = Self.dialects.first(where: { path.hasSuffix($0.path) })
        guard messages || dialect != nil else {
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
            : answer(request, body: body, headers: headers, dialect: dialect!, directives: directives, fault: fault, attempt: attempt)
        response.headers += fault?.headers ?? []
        // OpenAI names each request it answers (unless a fault names it otherwise); the
        // Messages stub sends Anthropic's request-id.
        if !messages && !response.headers.contains(where: { $0.0.lowercased() == "x-request-id" }) {
            response.headers.append(("x-request-id", "req_stub_\(attempt)"))
        }
        return response
    }

    private func answer(_ request: [String: Any], body: [UInt8], headers: [String: String], dialect: any StubDialectAnswer,
                        directives: StubDirectives, fault: StubFault?, attempt: Int) -> Response {
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
            if directives.echoKey {
                return error(directives.status, Self.keyEcho(headers), latency: directives.latencyMs)
            }
            return error(directives.status, "stub answered \(directives.status) as asked", latency: directives.latencyMs)
        }
        let latency = directives.latencyMs + (fault?.headerDelayMs ?? 0)
        let context = StubContext(request: request, body: body, model: (request["model"] as? String) ?? "stub",
                                  words: StubAnswer.pieces(prompt: StubAnswer.prompt(of: request), tokens: directives.tokens),
                                  fingerprint: StubResponder.fingerprint(body), promptTokens: body.count / 4 + 1)
        let asked = request["stream"].map { JSONKind.isBool($0) && ($0 as? Bool) == true } ?? false
        guard asked, let stream = dialect.stream(context) else {
            let body = StubResponder.json(dialect.plain(context))
            var pieces = [Piece(bytes: body, delayMs: 0)]
            if directives.plainPieceDelayMs > 0 {
                pieces = stride(from: 0, to: body.count, by: 4096).map { start in
                    Piece(bytes: Array(body[start..<min(start + 4096, body.count)]), delayMs: start == 0 ? 0 : directives.plainPieceDelayMs)
                }
            }
            var abort = false
            if let cut = fault?.cutAfter ?? fault?.truncateAfter {
                // A plain answer cut short: half of it, then the end.
                let whole = pieces[0].bytes
                pieces = [Piece(bytes: Array(whole.prefix(min(whole.count / 2, max(cut, 1) * 8))), delayMs: 0)]
                abort = fault?.cutAfter != nil
            }
            return Response(status: 200, headers: [("Content-Type", "application/json")], latencyMs: latency, pieces: pieces, abortAtEnd: abort)
        }
        let headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
        var numbering = 0
        func piece(_ event: StubEvent, delay: Int = 0) -> Piece {
            defer { if stream.numbered && event.raw == nil { numbering += 1 } }
            return Piece(bytes: StubResponder.serialise(event, sequence: stream.numbered ? numbering : nil), delayMs: delay)
        }
        if fault?.doneOnly == true {
            return Response(status: 200, headers: headers, latencyMs: latency, pieces: stream.endOnly.map { piece($0) })
        }
        if let fault, fault.endlessLineBytes > 0 {
            let run = Array(repeating: UInt8(ascii: "x"), count: 16 << 10)
            let pieces = stream.opening.map { piece($0) } + [Piece(bytes: Array("data: {\"x\":\"".utf8), delayMs: 0),
                                                             Piece(bytes: run, delayMs: 0, repeats: max(1, fault.endlessLineBytes / run.count))]
            return Response(status: 200, headers: headers, latencyMs: latency, pieces: pieces, abortAtEnd: true)
        }
        if directives.bulkBytes > 0 {
            // One 16 KiB content event, repeated until the stream holds bulk_bytes.
            let text = String(repeating: "abcdefghijklmnop", count: 1024)
            var pieces = stream.opening.map { piece($0) }
            let chunk = piece(stream.bulk(text))
            pieces.append(Piece(bytes: chunk.bytes, delayMs: 0, repeats: max(1, directives.bulkBytes / chunk.bytes.count)))
            // A cut fault sends all the text, then drops the connection before the end.
            let cut = fault?.cutAfter != nil
            if !cut { pieces += stream.closing.map { piece($0) } }
            return Response(status: 200, headers: headers, latencyMs: latency, pieces: pieces, abortAtEnd: cut)
        }
        var events: [(StubEvent, Int)] = stream.opening.map { ($0, 0) }
        for (index, event) in stream.content.enumerated() {
            events.append((event, directives.tokenDelayMs))
            if index == 0, fault?.errorInStream == true { events.append((stream.error, 0)) }
        }
        // The end follows the last token at once: N tokens at D ms hold a stream N x D ms.
        events += stream.closing.map { ($0, 0) }
        var pieces = events.map { piece($0.0, delay: $0.1) }
        if let fault, fault.stallMs > 0 {
            let keepalive = Piece(bytes: Array(": keep-alive\n\n".utf8), delayMs: fault.keepaliveMs)
            pieces.insert(contentsOf: Array(repeating: keepalive, count: max(1, fault.stallMs / fault.keepaliveMs)), at: min(1, pieces.count))
        }
        var abort = false
        if let cut = fault?.cutAfter {
            pieces = Array(pieces.prefix(max(1, cut)))
            abort = true
        } else if let cut = fault?.truncateAfter {
            pieces = Array(pieces.prefix(max(1, cut)))
        }
        return Response(status: 200, headers: headers, latencyMs: latency, pieces: pieces, abortAtEnd: abort)
    }

    /// One event as SSE: its `event:` line when it has a name, its data, a blank line. A
    /// numbered stream's events carry their `sequence_number`.
    static func serialise(_ event: StubEvent, sequence: Int?) -> [UInt8] {
        var text = event.name.map { "event: \($0)\n" } ?? ""
        if let raw = event.raw {
            text += "data: \(raw)\n\n"
            return Array(text.utf8)
        }
        var object = event.object ?? [:]
        if let sequence { object["sequence_number"] = sequence }
        return Array(text.utf8) + Array("data: ".utf8) + json(object) + Array("\n\n".utf8)
    }

    private func error(_ status: Int, _ message: String, latency: Int = 0) -> Response {
        let object: [String: Any] = ["error": ["message": message, "type": "stub_error", "code": status]]
        return Response(status: status, headers: [("Content-Type", "application/json")], latencyMs: latency,
                        pieces: [Piece(bytes: StubResponder.json(object), delayMs: 0)])
    }

    static func json(_ object: Any) -> [UInt8] {
        // The stub's answers are built of JSON values, which always serialize.
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// FNV-1a of the body: a stable id for a stable request.
    public static func fingerprint(_ bytes: [UInt8]) -> String { Fingerprint.fnv1a(bytes) }
}
