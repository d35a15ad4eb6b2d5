/// What the chat and legacy completions streams share, kept once: the `[DONE]` line,
/// events that must be JSON objects, `{"error": ...}` inside the stream, the members every
/// chunk repeats (the first `id`, `model`, `created` and `system_fingerprint`, the last
/// `usage`) and how they close the assembled object, and the verdict's rules.
struct ChunkStream {
    private(set) var sawDone = false
    private(set) var eventCount = 0
    private var providerError: (message: String, body: [UInt8])?
    private var malformed: String?
    private var id: [UInt8]?
    private var model: [UInt8]?
    private var created: [UInt8]?
    private var systemFingerprint: [UInt8]?
    private(set) var usage: [UInt8]?

    /// The event's object, for its choices; nil when the event ended the stream, failed
    /// it, or came after its end.
    mutating func chunk(_ payload: UnsafeRawBufferPointer) -> RawJSON.Value? {
        guard !sawDone, providerError == nil, malformed == nil else { return nil }
        eventCount += 1
        if Self.isDone(payload) {
            sawDone = true
            return nil
        }
        let object: RawJSON.Value
        switch Self.object(payload, event: eventCount) {
        case .success(let value): object = value
        case .failure(let problem):
            malformed = problem.message
            return nil
        }
        if let error = object["error"], !error.isNull {
            let body = Array(payload)
            providerError = (ProviderError.message(inBody: body) ?? "the stream carried an error", body)
            return nil
        }
        func raw(_ value: RawJSON.Value?) -> [UInt8]? {
            guard let value, !value.isNull else { return nil }
            return Array(payload[value.range])
        }
        if id == nil { id = raw(object["id"]) }
        if model == nil { model = raw(object["model"]) }
        if created == nil { created = raw(object["created"]) }
        if systemFingerprint == nil { systemFingerprint = raw(object["system_fingerprint"]) }
        if let value = raw(object["usage"]) { usage = value }
        return object
    }

    /// An event's choices: none when it has no `choices` (a usage chunk has `[]` or none);
    /// `choices` of any other kind than a list fails the stream, since its text would be
    /// lost without a word.
    mutating func choices(of object: RawJSON.Value) -> [RawJSON.Value]? {
        guard let choices = object["choices"], !choices.isNull else { return nil }
        guard case .array(let list, _) = choices else {
            refuse("\"choices\" is not a list")
            return nil
        }
        return list
    }

    /// Fails the stream: an event carried what no answer can be assembled from.
    mutating func refuse(_ problem: String) {
        if malformed == nil { malformed = "event \(eventCount): \(problem)" }
    }

    /// Why an event is not the JSON object every stream's event must be.
    struct Malformed: Error {
        let message: String
    }

    /// The event as a JSON object, or what is wrong with it (`event` counts from 1).
    static func object(_ payload: UnsafeRawBufferPointer, event: Int) -> Result<RawJSON.Value, Malformed> {
        let object: RawJSON.Value
        do {
            object = try RawJSON.parse(payload)
        } catch {
            return .failure(Malformed(message: "event \(event) is not JSON (\(error)): \(String(decoding: payload.prefix(200), as: UTF8.self))"))
        }
        guard case .object = object else {
            return .failure(Malformed(message: "event \(event) is not a JSON object: \(String(decoding: payload.prefix(200), as: UTF8.self))"))
        }
        return .success(object)
    }

    static func isDone(_ payload: UnsafeRawBufferPointer) -> Bool {
        guard payload.count < 64 else { return false }
        let text = String(decoding: payload, as: UTF8.self)
        return TextEscaping.trimmed(text) == "[DONE]"
    }

    /// The verdict once the stream has ended: `finished` when every choice has its
    /// `finish_reason`, `assembled` the result if it is one.
    func verdict(finished: Bool, hasChoices: Bool, _ assembled: () -> AssembledCompletion) -> StreamVerdict {
        if let providerError { return .providerError(message: providerError.message, body: providerError.body) }
        if let malformed { return .malformed(malformed) }
        guard sawDone || finished else {
            return .incomplete("the stream ended without [DONE] or a finish_reason after \(eventCount) events")
        }
        // `[DONE]` after no choice at all is no answer: publishing `choices: []` as a success
        // would hand the consumer nothing while claiming the task done.
        if !hasChoices {
            return .malformed("the stream ended with [DONE] but carried no choice (\(eventCount) events)")
        }
        return .complete(assembled())
    }

    /// The members after `choices` that close the result, `object` its type.
    func closing(object: String) -> [UInt8] {
        var tail: [UInt8] = []
        func member(_ name: String, _ raw: [UInt8]?, null: Bool = true) {
            guard raw != nil || null else { return }
            tail += Array(",\"\(name)\":".utf8)
            tail += raw ?? Array("null".utf8)
        }
        member("created", created)
        member("id", id)
        member("model", model)
        tail += Array(",\"object\":\"\(object)\"".utf8)
        member("system_fingerprint", systemFingerprint, null: false)
        member("usage", usage, null: false)
        tail.append(UInt8(ascii: "}"))
        return tail
    }
}
