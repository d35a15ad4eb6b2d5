import Foundation

/// How a streamed answer ended.
public enum StreamVerdict: Equatable, Sendable {
    /// The stream finished; the bytes are the assembled `chat.completion` object.
    case complete([UInt8])
    /// The server sent `{"error": ...}` inside the stream.
    case providerError(message: String, body: [UInt8])
    /// The stream stopped before `[DONE]` or a `finish_reason`.
    case incomplete(String)
    /// An event was not the JSON it should be.
    case malformed(String)
}

/// Folds `chat.completion.chunk` events into the `chat.completion` object that a
/// non-streamed call would have returned. Pure: events in, verdict out.
public struct StreamAssembler {
    struct ToolCall {
        var id: String?
        var type: String?
        var name: String?
        var arguments = ""
    }

    struct Choice {
        var role: String?
        var content: String?
        var refusal: String?
        var toolCalls: [Int: ToolCall] = [:]
        var finishReason: String?
    }

    public private(set) var sawDone = false
    public private(set) var eventCount = 0
    private var providerError: (message: String, body: [UInt8])?
    private var malformed: String?
    private var id: Any?
    private var model: Any?
    private var created: Any?
    private var systemFingerprint: Any?
    private var usage: Any?
    private var choices: [Int: Choice] = [:]

    public init() {}

    public mutating func consume(_ event: SSEParser.Event) {
        guard case .data(let payload) = event else { return }
        guard !sawDone, providerError == nil, malformed == nil else { return }
        eventCount += 1
        if payload.trimmingCharacters(in: .whitespaces) == "[DONE]" {
            sawDone = true
            return
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else {
            malformed = "event \(eventCount) is not a JSON object: \(payload.prefix(200))"
            return
        }
        if let error = object["error"], !(error is NSNull) {
            providerError = (ProviderError.message(in: object) ?? "the stream carried an error", Array(payload.utf8))
            return
        }
        if id == nil { id = object["id"] }
        if model == nil { model = object["model"] }
        if created == nil { created = object["created"] }
        if systemFingerprint == nil { systemFingerprint = object["system_fingerprint"] }
        if let value = object["usage"], !(value is NSNull) { usage = value }
        for case let choice as [String: Any] in object["choices"] as? [Any] ?? [] {
            merge(choice)
        }
    }

    /// Folds one choice's delta in. Every field is changed in place in the dictionary: a
    /// copied Choice would copy its text too, and a long answer would cost quadratic time.
    private mutating func merge(_ chunk: [String: Any]) {
        let index = (chunk["index"] as? Int) ?? 0
        if choices[index] == nil { choices[index] = Choice() }
        if let delta = chunk["delta"] as? [String: Any] {
            if let role = delta["role"] as? String { choices[index]!.role = role }
            if let text = delta["content"] as? String {
                if choices[index]!.content == nil { choices[index]!.content = "" }
                choices[index]!.content!.append(text)
            }
            if let text = delta["refusal"] as? String {
                if choices[index]!.refusal == nil { choices[index]!.refusal = "" }
                choices[index]!.refusal!.append(text)
            }
            for case let call as [String: Any] in delta["tool_calls"] as? [Any] ?? [] {
                let callIndex = (call["index"] as? Int) ?? 0
                if choices[index]!.toolCalls[callIndex] == nil { choices[index]!.toolCalls[callIndex] = ToolCall() }
                if let value = call["id"] as? String { choices[index]!.toolCalls[callIndex]!.id = value }
                if let value = call["type"] as? String { choices[index]!.toolCalls[callIndex]!.type = value }
                if let function = call["function"] as? [String: Any] {
                    if let value = function["name"] as? String { choices[index]!.toolCalls[callIndex]!.name = (choices[index]!.toolCalls[callIndex]!.name ?? "") + value }
                    if let value = function["arguments"] as? String { choices[index]!.toolCalls[callIndex]!.arguments.append(value) }
                }
            }
        }
        if let reason = chunk["finish_reason"] as? String { choices[index]!.finishReason = reason }
    }

    /// The verdict once the stream has ended.
    public func verdict() -> StreamVerdict {
        if let providerError { return .providerError(message: providerError.message, body: providerError.body) }
        if let malformed { return .malformed(malformed) }
        let finished = !choices.isEmpty && choices.values.allSatisfy { $0.finishReason != nil }
        guard sawDone || finished else {
            return .incomplete("the stream ended without [DONE] or a finish_reason after \(eventCount) events")
        }
        return .complete(assembled())
    }

    private func assembled() -> [UInt8] {
        var object: [String: Any] = [
            "id": id ?? NSNull(),
            "object": "chat.completion",
            "created": created ?? NSNull(),
            "model": model ?? NSNull(),
        ]
        if let systemFingerprint { object["system_fingerprint"] = systemFingerprint }
        if let usage { object["usage"] = usage }
        object["choices"] = choices.keys.sorted().map { index -> [String: Any] in
            let choice = choices[index]!
            var message: [String: Any] = ["role": choice.role ?? "assistant", "content": (choice.content as Any?) ?? NSNull()]
            if let refusal = choice.refusal { message["refusal"] = refusal }
            if !choice.toolCalls.isEmpty {
                message["tool_calls"] = choice.toolCalls.keys.sorted().map { key -> [String: Any] in
                    let call = choice.toolCalls[key]!
                    return [
                        "id": (call.id as Any?) ?? NSNull(),
                        "type": call.type ?? "function",
                        "function": ["name": (call.name as Any?) ?? NSNull(), "arguments": call.arguments] as [String: Any],
                    ]
                }
            }
            return ["index": index, "message": message, "finish_reason": (choice.finishReason as Any?) ?? NSNull()]
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return Array(data)
    }
}

/// Reads the human message out of an OpenAI-shaped error body.
public enum ProviderError {
    public static func message(in object: [String: Any]) -> String? {
        if let error = object["error"] as? [String: Any] { return error["message"] as? String }
        return object["error"] as? String
    }

    public static func message(inBody bytes: [UInt8]) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return nil }
        return message(in: object)
    }
}
