// libFuzzer entry point for llmspool's parsers. One binary, ten targets, chosen with
// LLMSPOOL_FUZZ_TARGET=sse|validator|config|json|headers|numbers|messages|responses|completions|prompt. Each target also checks an invariant that
// must hold for every input, so that a wrong answer is a finding, not only a crash.
import Foundation

private let target = ProcessInfo.processInfo.environment["LLMSPOOL_FUZZ_TARGET"] ?? "sse"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    switch target {
    case "sse": fuzzSSE(bytes)
    case "validator": fuzzValidator(bytes)
    case "config": fuzzConfig(bytes)
    case "json": fuzzJSON(bytes)
    case "headers": fuzzHeaders(bytes)
    case "numbers": fuzzNumbers(bytes)
    case "messages": fuzzMessages(bytes)
    case "responses": fuzzAssembler(bytes, ResponsesAssembler.init, object: "response")
    case "completions": fuzzAssembler(bytes, CompletionsAssembler.init, object: "text_completion")
    case "prompt": fuzzPrompt(bytes)
    default: fatalError("unknown LLMSPOOL_FUZZ_TARGET \(target)")
    }
    return 0
}

/// Any split of a stream must give the same events as the whole; the assembler must
/// reach a verdict on whatever the parser gives it.
private func fuzzSSE(_ bytes: [UInt8]) {
    func events(_ chunks: [ArraySlice<UInt8>]) -> [SSEParser.Event] {
        var parser = SSEParser()
        var out: [SSEParser.Event] = []
        for chunk in chunks { parser.feed(chunk) { out.append($0) } }
        parser.finish { out.append($0) }
        return out
    }
    let whole = events([bytes[...]])
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let split = events([bytes[..<cut], bytes[cut...]])
    precondition(whole == split, "the split at \(cut) changed the events")
    var assembler = StreamAssembler()
    for event in whole { assembler.consume(event) }
    if case .complete(let result) = assembler.verdict() {
        precondition((try? JSONSerialization.jsonObject(with: Data(result.document))) != nil, "an assembled result must be JSON")
    }
}

/// The Messages assembler on any event stream: the same verdict whether the bytes come
/// whole or split, and whether the text is taken off after every event (as the engine
/// spills it) or held; a complete verdict is a JSON object whose `content` is an array.
private func fuzzMessages(_ bytes: [UInt8]) {
    func run(_ chunks: [ArraySlice<UInt8>], taking: Bool) -> (StreamVerdict, [UInt8]) {
        var parser = SSEParser()
        var assembler = MessagesAssembler()
        var file: [UInt8] = []
        var took = false
        func consume(_ event: SSEParser.RawEvent) {
            assembler.consume(event)
            if case .data(let payload) = event { _ = assembler.isContent(payload) }
            guard taking, assembler.heldContentCount > 0 else { return }
            if !took { file += assembler.contentHead }
            took = true
            file += assembler.takeContent()
            precondition(assembler.heldContentCount == 0, "text held after takeContent")
        }
        for chunk in chunks { chunk.withUnsafeBytes { parser.feedRaw($0, consume) } }
        parser.finishRaw(consume)
        let verdict = assembler.verdict()
        if case .complete(let message) = verdict {
            precondition(!took || message.head.isEmpty, "a head after the text was taken")
            file += message.head + message.content + message.tail
        }
        return (verdict, file)
    }
    let (whole, document) = run([bytes[...]], taking: false)
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let (split, splitDocument) = run([bytes[..<cut], bytes[cut...]], taking: false)
    let (taken, takenDocument) = run([bytes[..<cut], bytes[cut...]], taking: true)
    switch (whole, split, taken) {
    case (.complete, .complete, .complete):
        precondition(document == splitDocument, "the split at \(cut) changed the message")
        precondition(document == takenDocument, "taking the text off changed the message")
        let object = try? JSONSerialization.jsonObject(with: Data(document)) as? [String: Any]
        precondition(object?["content"] is [Any], "an assembled message must be a JSON object with a content array")
    case (.providerError(let a, _), .providerError(let b, _), .providerError(let c, _)):
        precondition(a == b && b == c, "the error changed with the split")
    case (.incomplete, .incomplete, .incomplete), (.malformed, .malformed, .malformed):
        break
    default:
        preconditionFailure("the verdict changed with the split or the taking: \(whole) / \(split) / \(taken)")
    }
}

/// A dialect's assembler over any stream, cut where the first byte says and spilled (its
/// text taken off) after each piece as the engine does: the same verdict and document as
/// the stream fed whole, and a complete result is a JSON object of the dialect's type.
private func fuzzAssembler(_ bytes: [UInt8], _ make: () -> any StreamAssembling, object type: String) {
    func run(_ cuts: [Int], spill: Bool) -> (String, [UInt8]?) {
        var assembler = make()
        var parser = SSEParser()
        var written: [UInt8] = []
        var spilled = false
        var start = 0
        for end in cuts + [bytes.count] {
            bytes[start..<end].withUnsafeBytes { chunk in parser.feedRaw(chunk) { assembler.consume($0) } }
            start = end
            if spill && assembler.heldContentCount > 0 {
                if !spilled { written += assembler.contentHead }
                spilled = true
                written += assembler.takeContent()
            }
        }
        parser.finishRaw { assembler.consume($0) }
        switch assembler.verdict() {
        case .complete(let result): return ("complete", written + result.head + result.content + result.tail)
        case .providerError(let message, let body): return ("error \(message) \(body)", nil)
        case .incomplete(let reason): return ("incomplete \(reason)", nil)
        case .malformed(let reason): return ("malformed \(reason)", nil)
        }
    }
    let whole = run([], spill: false)
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let pieces = run([cut], spill: true)
    precondition(whole.0 == pieces.0 && whole.1 == pieces.1, "the split at \(cut) with spilling changed the verdict or the result")
    if let document = whole.1 {
        let parsed = try? JSONSerialization.jsonObject(with: Data(document)) as? [String: Any]
        precondition(parsed != nil, "an assembled result must be a JSON object")
        if type == "text_completion" { precondition(parsed?["object"] as? String == type, "a completion's result is not a text_completion") }
    }
}

/// What the raw reader accepts, Foundation must accept too (the reader is stricter only
/// about trailing commas, which Foundation lets pass), and every string it finds must
/// decode to what Foundation decodes.
private func fuzzJSON(_ bytes: [UInt8]) {
    guard let value = try? RawJSON.parse(bytes) else { return }
    let foundation = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    precondition(foundation != nil, "RawJSON accepted what Foundation refuses")
    if case .object(let members, _) = value, let object = foundation as? [String: Any] {
        for member in members {
            guard case .string(let escaped) = value[member.key], let expected = object[member.key] as? String else { continue }
            let decoded = bytes.withUnsafeBytes { RawJSON.decodeString(UnsafeRawBufferPointer(rebasing: $0[escaped])) }
            precondition(decoded == expected, "a string decoded differently from Foundation")
        }
    }
}

/// The validator must never crash, and must accept only what Foundation can parse as an
/// object with a string model and what its dialect requires (messages, input or prompt);
/// an envelope's body is what is checked.
private func fuzzValidator(_ bytes: [UInt8]) {
    switch RequestValidator.validate(bytes) {
    case .success(let summary):
        let file = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        let object = summary.body.lowerBound > 3 ? file?["body"] as? [String: Any] : file
        precondition(object?["model"] as? String == summary.model, "accepted a request without its model")
        let required = ["chat.completions": "messages", "responses": "input", "completions": "prompt", "embeddings": "input"][summary.dialect]
        if let required { precondition(object?[required] != nil, "accepted a \(summary.dialect) request without \(required)") }
        if summary.dialect == ChatCompletionsDialect.id { precondition(object?["messages"] is [Any], "accepted a request without messages") }
        if let brace = summary.usageSplice {
            let spliced = Array(bytes[...brace]) + Array(#""stream_options":{"include_usage":true},"#.utf8) + Array(bytes[(brace + 1)...])
            precondition((try? JSONSerialization.jsonObject(with: Data(spliced))) != nil, "the usage splice broke the JSON")
        }
    case .failure(let problem):
        precondition(!problem.message.isEmpty, "a refusal must say why")
    }
}

/// The config parser must never crash, and every refusal must name its source.
private func fuzzConfig(_ bytes: [UInt8]) {
    do {
        let config = try Config.parse(bytes, source: "fuzz.json")
        precondition(config.concurrency >= 1, "concurrency below 1 was accepted")
        for endpoint in (try? config.resolvedEndpoints(environment: [:])) ?? [] {
            // The version becomes a header line: nothing in it may end or bend the line.
            precondition(endpoint.anthropicVersion.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }, "a header-breaking anthropic_version was accepted")
            precondition(!endpoint.baseURL.hasSuffix("/"), "a base URL kept its trailing slash")
        }
    } catch let error as ConfigError {
        precondition(error.message.contains("fuzz.json") || error.message.contains("endpoint"), "an error without its source: \(error.message)")
    } catch {
        preconditionFailure("an unexpected error type: \(error)")
    }
}

/// A response head, line by line, as libcurl hands it over: every line parses, names come
/// out in lower case, values without surrounding blanks, and what the retry policy and the
/// endpoint gate make of the headers is a finite, non-negative wait.
private func fuzzHeaders(_ bytes: [UInt8]) {
    var headers: [String: String] = [:]
    for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
        switch HeaderLine.parse(line + [0x0A]) {
        case .field(let name, let value):
            precondition(name == name.lowercased() || name.utf8.contains { $0 >= 0x80 }, "a header name kept upper case")
            precondition(value.first.map { $0 != " " && $0 != "\t" } ?? true, "a value kept leading blanks")
            headers[name] = value
        case .statusLine:
            headers.removeAll()
        case .other:
            break
        }
    }
    checkWaits(headers)
}

/// One header value against every number parser: none traps, every wait is finite and
/// non-negative, and a message can always print it.
private func fuzzNumbers(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    if let seconds = RetryPolicy.duration(text) {
        precondition(seconds.isFinite && seconds >= 0, "duration gave \(seconds)")
        _ = RetryPolicy.wholeSeconds(seconds)
    }
    if let date = HTTPDate.parse(text) {
        precondition(date.timeIntervalSince1970.isFinite, "an HTTP date out of range")
    }
    if let date = RFC3339Date.parse(text) {
        precondition(date.timeIntervalSince1970.isFinite, "an RFC 3339 time out of range")
    }
    if let value = Double(text) { _ = RetryPolicy.wholeSeconds(value) }
    checkWaits(["retry-after": text])
    checkWaits(["retry-after-ms": text])
    checkWaits(["x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": text,
                "x-ratelimit-remaining-tokens": text, "x-ratelimit-reset-tokens": text])
    checkWaits(["anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": text,
                "anthropic-ratelimit-tokens-remaining": text, "anthropic-ratelimit-tokens-reset": text])
}

private func checkWaits(_ headers: [String: String]) {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    if let delay = RetryPolicy.requestedDelay(headers, now: now) {
        precondition(delay.isFinite && delay >= 0, "requestedDelay gave \(delay)")
    }
    for status in [200, 429, 503] {
        let feedback = EndpointFeedback.from(.response(status: status), headers: headers, now: now)
        if let pause = feedback.pauseSeconds { precondition(pause.isFinite && pause >= 0, "a pause of \(pause)") }
        var gate = EndpointGate(concurrency: 1, now: now.timeIntervalSince1970)
        gate.admit(estimatedTokens: 1, now: now.timeIntervalSince1970)
        gate.release(feedback, now: now.timeIntervalSince1970)
        _ = gate.readiness(estimatedTokens: 1, now: now.timeIntervalSince1970)
    }
    var history = TaskHistory(firstSeen: now)
    history.attempts = [AttemptEntry(startedAt: now, endedAt: now, endpoint: "e", outcome: "http", bytesSent: 0, bytesReceived: 0)]
    let plan = RetryPolicy.plan(AttemptFailure(.http, "429", httpStatus: 429), headers: headers, history: history, endpointIndex: 0,
                                endpointCount: 2, now: now, settings: RetrySettings(), random: 0.5)
    if case .retry(let delay, _, _) = plan { precondition(delay.isFinite && delay >= 0, "a retry after \(delay)") }
    if case .giveUp(let reason) = plan { _ = reason.description }
}

/// Prompt files, front matter (libyaml) and role headings: never a crash; what is accepted
/// is a conversation with text in every turn; the body made from it is JSON that names
/// every turn; and its transcript reads back as the same turns and the answer.
private func fuzzPrompt(_ bytes: [UInt8]) {
    guard case .success(let file) = PromptFile.parse(bytes, yaml: LibYAML.reader) else { return }
    precondition(!file.messages.isEmpty && file.messages.allSatisfy { !$0.text.isEmpty }, "an accepted prompt has text in every turn")
    precondition(file.messages.contains { $0.role != .system }, "an accepted prompt has a turn that is not a system one")
    if case .success(let made) = PromptBody.make(file, defaultModel: "m") {
        let body = made.body.encoded()
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            preconditionFailure("the body made from a prompt file is not a JSON object")
        }
        if file.settings.api == .chat {
            let turns = (object["messages"] as? [Any])?.count
            precondition(turns == file.messages.count + (file.settings.system == nil ? 0 : 1), "the chat body has every turn")
        }
        precondition((try? RawJSON.parse(body)) != nil, "the raw reader reads the made body")
    }
    let transcript = PromptTranscript.render(file, answer: "The answer.")
    guard case .success(let again) = PromptFile.parse(transcript, yaml: LibYAML.reader) else {
        preconditionFailure("a transcript does not read back")
    }
    precondition(again.settings == file.settings, "a transcript keeps the settings")
    precondition(again.messages.count == file.messages.count + 1, "a transcript has every turn and the answer")
    precondition(zip(again.messages, file.messages).allSatisfy { $0.role == $1.role }, "a transcript keeps the turns in order")
    precondition(again.messages.last?.role == .assistant && again.messages.last?.text == "The answer.", "the answer comes last")
}
