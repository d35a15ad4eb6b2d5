import FoundationEssentials

/// How a streamed answer ended.
public enum StreamVerdict: Equatable, Sendable {
    /// The stream finished; the result is the `chat.completion` object.
    case complete(AssembledCompletion)
    /// The server sent `{"error": ...}` inside the stream.
    case providerError(message: String, body: [UInt8])
    /// The stream stopped before `[DONE]` or a `finish_reason`.
    case incomplete(String)
    /// An event was not the JSON it should be.
    case malformed(String)
}

/// The assembled `chat.completion`, in three parts so that the first choice's text need
/// not be held: the document is `head + content + tail`, where whatever of the text was
/// taken with `StreamAssembler.takeContent()` sits between `head` and `content` (and
/// `head` is then empty: whoever took the text wrote the head before it).
public struct AssembledCompletion: Equatable, Sendable {
    public var head: [UInt8]
    public var content: [UInt8]
    public var tail: [UInt8]
    /// The numeric token counts of `usage`, if the stream carried it.
    public var usage: [String: Int]?

    public init(head: [UInt8], content: [UInt8], tail: [UInt8], usage: [String: Int]?) {
        self.head = head
        self.content = content
        self.tail = tail
        self.usage = usage
    }

    /// The whole document, when none of the text was taken.
    public var document: [UInt8] { head + content + tail }
}

/// Folds `chat.completion.chunk` events into the `chat.completion` object that a
/// non-streamed call would have returned. Pure: events in, verdict out. Strings are kept
/// as escaped by the server and copied into the result unchanged; the first choice's
/// text, which is nearly all of a long answer, can be taken off in pieces as it grows.
public struct StreamAssembler {
    /// Everything before the first choice's text in the result.
    public static let contentHead = Array(#"{"choices":[{"index":0,"message":{"content":""#.utf8)

    struct ToolCall {
        var id: [UInt8]?
        var type: [UInt8]?
        var name: [UInt8]?
        var arguments: [UInt8] = []
    }

    struct Choice {
        var role: [UInt8]?
        /// Escaped text, without quotes; nil until a `content` string arrives.
        var content: [UInt8]?
        var refusal: [UInt8]?
        var toolCalls: [Int: ToolCall] = [:]
        /// The raw JSON value.
        var finishReason: [UInt8]?
    }

    private var stream = ChunkStream()
    public var sawDone: Bool { stream.sawDone }
    public var eventCount: Int { stream.eventCount }
    private var choices: [Int: Choice] = [:]
    /// Bytes of the first choice's text handed out by `takeContent()`.
    public private(set) var contentTaken = 0

    public init() {}

    /// Escaped text of the first choice not yet taken.
    public var heldContentCount: Int { choices[0]?.content?.count ?? 0 }

    /// Hands out the first choice's text received so far, leaving none held. The first
    /// call's bytes must be preceded by `contentHead` in the result.
    public mutating func takeContent() -> [UInt8] {
        guard let text = choices[0]?.content, !text.isEmpty else { return [] }
        contentTaken += text.count
        choices[0]!.content = []
        return text
    }

    public mutating func consume(_ event: SSEParser.Event) {
        switch event {
        case .comment:
            consume(.comment as SSEParser.RawEvent)
        case .data(let payload):
            var text = payload
            text.withUTF8 { consume(.data(UnsafeRawBufferPointer($0))) }
        }
    }

    public mutating func consume(_ event: SSEParser.RawEvent) {
        guard case .data(let payload) = event, let object = stream.chunk(payload) else { return }
        guard let list = stream.choices(of: object) else { return }
        for choice in list { merge(choice, payload) }
    }

    static func integer(_ value: RawJSON.Value?, _ payload: UnsafeRawBufferPointer) -> Int? {
        guard case .number(let range)? = value, range.count <= 18 else { return nil }
        return Int(String(decoding: payload[range], as: UTF8.self))
    }

    /// A choice's or a tool call's `index` as an event gives it.
    enum Index: Equatable {
        /// Absent or null: the caller decides (a single choice, or a server that leaves it out).
        case absent
        case value(Int)
        /// Anything but a whole number from 0 (`1e3`, `1.5`, `-1`, `true`, a string, 2^63):
        /// folded into another entry, it would publish garbled text or merged tool calls as a success.
        case invalid(String)
    }

    static func index(_ value: RawJSON.Value?, _ payload: UnsafeRawBufferPointer) -> Index {
        guard let value, !value.isNull else { return .absent }
        let text = payload[value.range]
        if case .number = value, text.count <= 18, text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(String(decoding: text, as: UTF8.self)) {
            return .value(number)
        }
        return .invalid(String(decoding: text.prefix(40), as: UTF8.self))
    }

    static func escaped(_ value: RawJSON.Value?, _ payload: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard case .string(let range)? = value else { return nil }
        return UnsafeRawBufferPointer(rebasing: payload[range])
    }

    /// Folds one choice's delta in. Every field is changed in place in the dictionary: a
    /// copied Choice would copy its text too, and a long answer would cost quadratic time.
    private mutating func merge(_ chunk: RawJSON.Value, _ payload: UnsafeRawBufferPointer) {
        guard case .object = chunk else { return }
        let index: Int
        switch Self.index(chunk["index"], payload) {
        case .absent: index = 0
        case .value(let value): index = value
        case .invalid(let text):
            stream.refuse("a choice's \"index\" is not a whole number from 0: \(text)")
            return
        }
        if choices[index] == nil { choices[index] = Choice() }
        if let delta = chunk["delta"] {
            if let role = Self.escaped(delta["role"], payload) { choices[index]!.role = Array(role) }
            if let text = Self.escaped(delta["content"], payload) {
                if choices[index]!.content == nil { choices[index]!.content = [] }
                choices[index]!.content!.append(contentsOf: text)
            }
            if let text = Self.escaped(delta["refusal"], payload) {
                if choices[index]!.refusal == nil { choices[index]!.refusal = [] }
                choices[index]!.refusal!.append(contentsOf: text)
            }
            if case .array(let calls, _)? = delta["tool_calls"] {
                for call in calls {
                    guard case .object = call else { continue }
                    let callIndex: Int
                    switch Self.index(call["index"], payload) {
                    case .value(let value): callIndex = value
                    case .invalid(let text):
                        stream.refuse("a tool call's \"index\" is not a whole number from 0: \(text)")
                        return
                    case .absent:
                        // Some servers leave the index out: a call with an id of its own that
                        // the last call does not have begins the next one, else it goes on.
                        let last = choices[index]!.toolCalls.keys.max()
                        if let last, let id = Self.escaped(call["id"], payload), let lastID = choices[index]!.toolCalls[last]!.id,
                           !lastID.elementsEqual(id) {
                            callIndex = last + 1
                        } else {
                            callIndex = last ?? 0
                        }
                    }
                    if choices[index]!.toolCalls[callIndex] == nil { choices[index]!.toolCalls[callIndex] = ToolCall() }
                    if let value = Self.escaped(call["id"], payload) { choices[index]!.toolCalls[callIndex]!.id = Array(value) }
                    if let value = Self.escaped(call["type"], payload) { choices[index]!.toolCalls[callIndex]!.type = Array(value) }
                    if let function = call["function"] {
                        if let value = Self.escaped(function["name"], payload) {
                            choices[index]!.toolCalls[callIndex]!.name = (choices[index]!.toolCalls[callIndex]!.name ?? []) + value
                        }
                        if let value = Self.escaped(function["arguments"], payload) {
                            choices[index]!.toolCalls[callIndex]!.arguments.append(contentsOf: value)
                        }
                    }
                }
            }
        }
        if case .string(let range)? = chunk["finish_reason"] {
            choices[index]!.finishReason = Array(payload[(range.lowerBound - 1)..<(range.upperBound + 1)])
        }
    }

    /// The verdict once the stream has ended.
    public func verdict() -> StreamVerdict {
        let finished = !choices.isEmpty && choices.values.allSatisfy { $0.finishReason != nil }
        return stream.verdict(finished: finished, hasChoices: !choices.isEmpty) { assembled() }
    }

    private func assembled() -> AssembledCompletion {
        var result = AssembledCompletion(head: [], content: [], tail: [], usage: stream.usage.flatMap(Self.usageCounts))
        let first = choices[0]
        // The first choice's text sits between head and tail, streamed or held.
        let streamed = first?.content != nil
        if streamed {
            result.head = contentTaken > 0 ? [] : Self.contentHead
            result.content = first!.content!
        }
        var tail: [UInt8] = []
        func string(_ escaped: [UInt8]) { tail.append(0x22); tail += escaped; tail.append(0x22) }
        func member(_ name: String, _ raw: [UInt8]?, null: Bool = true) {
            guard raw != nil || null else { return }
            tail += Array(",\"\(name)\":".utf8)
            tail += raw ?? Array("null".utf8)
        }
        func rest(of choice: Choice, index: Int) {
            tail += Array(",\"role\":".utf8)
            string(choice.role ?? Array("assistant".utf8))
            if let refusal = choice.refusal {
                tail += Array(",\"refusal\":".utf8)
                string(refusal)
            }
            if !choice.toolCalls.isEmpty {
                tail += Array(",\"tool_calls\":[".utf8)
                for (position, key) in choice.toolCalls.keys.sorted().enumerated() {
                    let call = choice.toolCalls[key]!
                    if position > 0 { tail.append(UInt8(ascii: ",")) }
                    tail += Array("{\"id\":".utf8)
                    if let id = call.id { string(id) } else { tail += Array("null".utf8) }
                    tail += Array(",\"type\":".utf8)
                    string(call.type ?? Array("function".utf8))
                    tail += Array(",\"function\":{\"name\":".utf8)
                    if let name = call.name { string(name) } else { tail += Array("null".utf8) }
                    tail += Array(",\"arguments\":".utf8)
                    string(call.arguments)
                    tail += Array("}}".utf8)
                }
                tail.append(UInt8(ascii: "]"))
            }
            tail.append(UInt8(ascii: "}"))
            member("finish_reason", choice.finishReason)
            tail.append(UInt8(ascii: "}"))
        }
        var ordered = choices.keys.sorted()
        if streamed {
            tail.append(0x22)
            rest(of: first!, index: 0)
            ordered.removeAll { $0 == 0 }
        } else {
            tail += Array("{\"choices\":[".utf8)
        }
        for (position, index) in ordered.enumerated() {
            let choice = choices[index]!
            if streamed || position > 0 { tail.append(UInt8(ascii: ",")) }
            tail += Array("{\"index\":\(index),\"message\":{\"content\":".utf8)
            if let content = choice.content { string(content) } else { tail += Array("null".utf8) }
            rest(of: choice, index: index)
        }
        tail.append(UInt8(ascii: "]"))
        tail += stream.closing(object: "chat.completion")
        result.tail = tail
        return result
    }

    static func usageCounts(_ raw: [UInt8]) -> [String: Int]? {
        guard let value = RawJSON.valueIfJSON(raw) else { return nil }
        return AttemptJudge.counts(value, in: raw)
    }
}
