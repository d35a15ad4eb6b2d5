
/// Decides what an attempt amounted to. Pure: the transport's ending and the response
/// (already read by the caller) in, a verdict out.
public enum AttemptJudge {
    /// What the finisher must publish.
    public enum Verdict: Sendable, Equatable {
        /// Success; `assembled` is the result to write, or nil when the `.partial` is the result.
        case success(assembled: AssembledCompletion?, usage: [String: Int]?)
        case failure(AttemptFailure)
        case cancelled
    }

    /// Whether the body must be read as an event stream: only when the request asked for a
    /// stream and the server answered with one (servers answer errors as plain JSON).
    public static func isEventStream(requested: Bool, headers: [String: String]) -> Bool {
        requested && (headers["content-type"]?.lowercased().contains("text/event-stream") ?? false)
    }

    /// Judges everything that can be judged without reading the body; nil means "read it".
    /// `location` is a redirect's `Location` header, named in its failure.
    public static func judgeEnding(_ ending: AttemptEnding, location: String? = nil, bodyPrefix: () -> [UInt8]) -> Verdict? {
        switch ending {
        case .cancelled, .leaseLost:
            return .cancelled
        case .diskError(let error):
            return .failure(AttemptFailure(.disk, "writing the answer failed: \(error)"))
        case .responseTooLarge(let limit):
            return .failure(AttemptFailure(.responseTooLarge, "the answer grew past \(limit) bytes (max_response_bytes)"))
        case .eventTooLarge(let limit):
            // As with an answer past max_response_bytes, another attempt would be paid for and fail alike.
            return .failure(AttemptFailure(.responseTooLarge, "an event of the stream passed \(limit) bytes without ending (max_event_bytes)"))
        case .crashLoop(let starts):
            return .failure(AttemptFailure(.crashLoop, "the daemon stopped without finishing this request \(starts) times in a row (it may be what crashes it); not sent again"))
        case .expired(let message):
            return .failure(AttemptFailure(.expired, message))
        case .headerTooLarge(let message):
            return .failure(AttemptFailure(.responseTooLarge, "a response header line passed libcurl's limit of 100 KiB: \(message)"))
        case .transportError(let code, let message):
            return .failure(AttemptFailure(.transport, "\(message) (curl code \(code))", curlCode: code))
        case .timedOut(let timer, let message):
            return .failure(AttemptFailure(.transport, "\(timer.rawValue) timer fired: \(message)", timer: timer))
        case .response(let status) where !(200..<300).contains(status):
            let body = bodyPrefix()
            var detail = ProviderError.message(inBody: body).map { ": \($0)" } ?? ""
            if (300..<400).contains(status) {
                // Not followed: the body and the key would go to an address the config does
                // not name (and a 301/302 turns a POST into a GET).
                // Without its query: a signed address carries its token there.
                let target = location.map { " to \(TextEscaping.escape(String($0.prefix { $0 != "?" && $0 != "#" }.prefix(512))))" } ?? ""
                detail += " (a redirect\(target), not followed: set base_url to the address it names)"
            }
            return .failure(AttemptFailure(.http, "the endpoint answered HTTP \(status)\(detail)", httpStatus: status, providerBody: body.isEmpty ? nil : body))
        case .response:
            return nil
        }
    }

    /// Why a plain answer is not a JSON object, with the parser's reason and position.
    static func notAnObject(_ body: [UInt8], contentEncoding: String?) -> String {
        var why: String
        do {
            _ = try RawJSON.parse(body)
            why = "it is JSON, but not an object"
        } catch {
            why = "\(error)"
        }
        if let encoding = contentEncoding.map(TextEscaping.trimmed), !encoding.isEmpty, encoding.lowercased() != "identity" {
            why += "; the server sent it with Content-Encoding: \(TextEscaping.escape(String(encoding.prefix(40)))), which was not asked for"
        }
        return "the answer is not a JSON object (\(body.count) bytes): \(why)"
    }

    /// A plain (non-streamed) 2xx answer must be a JSON object without `error`; its usage
    /// is read as the request's dialect says.
    /// Read with `RawJSON`: every plain answer passes here, and Foundation's parser (with
    /// its bridging) cost more than the rest of the judgement.
    /// `contentEncoding`: the answer's `Content-Encoding`, named when the body is not JSON
    /// (the daemon asks for none, so an encoded body is the server's doing).
    public static func judgePlain(status: Int, body: [UInt8], dialect: any Dialect = DialectRegistry.fallback,
                                  contentEncoding: String? = nil) -> Verdict {
        if body.isEmpty {
            return .failure(AttemptFailure(.malformedResponse, "the endpoint answered HTTP \(status) with an empty body", httpStatus: status))
        }
        guard let value = RawJSON.valueIfJSON(body), case .object = value else {
            return .failure(AttemptFailure(.malformedResponse, notAnObject(body, contentEncoding: contentEncoding), httpStatus: status,
                                           providerBody: Array(body.prefix(65536))))
        }
        if let error = value["error"], !error.isNull {
            let message = ProviderError.message(inBody: body) ?? "the answer carried an error"
            return .failure(AttemptFailure(.providerError, message, httpStatus: status, providerBody: Array(body.prefix(65536)),
                                           embeddedCode: ProviderError.embeddedCode(inBody: body)))
        }
        if let problem = dialect.plainAnswerProblem(value, in: body) {
            return .failure(AttemptFailure(.malformedResponse, problem, httpStatus: status, providerBody: Array(body.prefix(65536))))
        }
        return .success(assembled: nil, usage: dialect.usage(ofPlainAnswer: value, in: body).map(UsageNames.normalised))
    }

    /// The integer token counts of `usage`, read from the raw answer.
    static func usage(_ answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]? {
        answer["usage"].flatMap { counts($0, in: body) }
    }

    /// The integer members of a `usage` object, and those of its objects one level down as
    /// `parent.member` (`prompt_tokens_details.cached_tokens`), which `UsageNames` reads.
    static func counts(_ usage: RawJSON.Value, in body: [UInt8]) -> [String: Int]? {
        guard case .object(let members, _) = usage else { return nil }
        var counts: [String: Int] = [:]
        func integer(_ value: RawJSON.Value) -> Int? {
            guard case .number(let range) = value, let number = Int(String(decoding: body[range], as: UTF8.self)) else { return nil }
            // No token count is negative; one read would make the totals and the metrics' counters go down.
            return number >= 0 ? number : nil
        }
        for member in members {
            if let number = integer(member.value) {
                counts[member.key] = number
            } else if case .object(let inner, _) = member.value {
                for detail in inner { if let number = integer(detail.value) { counts[member.key + "." + detail.key] = number } }
            }
        }
        return counts.isEmpty ? nil : counts
    }

    /// A stream's verdict; an error sent inside it is classified by the request's dialect.
    public static func judgeStream(status: Int, verdict: StreamVerdict, dialect: any Dialect = DialectRegistry.fallback) -> Verdict {
        switch verdict {
        case .complete(let assembled):
            return .success(assembled: assembled, usage: assembled.usage.map(UsageNames.normalised))
        case .providerError(let message, let body):
            return .failure(dialect.streamFailure(message: message, body: body, status: status))
        case .incomplete(let reason):
            return .failure(AttemptFailure(.incompleteStream, reason, httpStatus: status))
        case .malformed(let reason):
            return .failure(AttemptFailure(.malformedResponse, reason, httpStatus: status))
        }
    }
}
