/// Folds the `text_completion` chunks of a legacy completions stream into the
/// `text_completion` object a plain call returns, each choice's text joined. Pure; strings
/// are kept as the server escaped them, and the first choice's text, nearly all of a long
/// answer, can be taken off in pieces as it grows (as `StreamAssembler` does for chat).
public struct CompletionsAssembler: StreamAssembling {
    /// Everything before the first choice's text in the result.
    public static let contentHead = Array(#"{"choices":[{"index":0,"text":""#.utf8)

    public var contentHead: [UInt8] { Self.contentHead }

    struct Choice {
        /// Escaped text, without quotes; nil until a `text` string arrives.
        var text: [UInt8]?
        /// The raw JSON value.
        var finishReason: [UInt8]?
    }

    private var stream = ChunkStream()
    public var sawDone: Bool { stream.sawDone }
    public var eventCount: Int { stream.eventCount }
    private var choices: [Int: Choice] = [:]
    private var contentTaken = 0

    public init() {}

    public var heldContentCount: Int { choices[0]?.text?.count ?? 0 }

    public mutating func takeContent() -> [UInt8] {
        guard let text = choices[0]?.text, !text.isEmpty else { return [] }
        contentTaken += text.count
        choices[0]!.text = []
        return text
    }

    public mutating func consume(_ event: SSEParser.RawEvent) {
        guard case .data(let payload) = event, let object = stream.chunk(payload) else { return }
        guard let list = stream.choices(of: object) else { return }
        for choice in list {
            guard case .object = choice else { continue }
            let index: Int
            switch StreamAssembler.index(choice["index"], payload) {
            case .absent: index = 0
            case .value(let value): index = value
            case .invalid(let text):
                stream.refuse("a choice's \"index\" is not a whole number from 0: \(text)")
                return
            }
            if choices[index] == nil { choices[index] = Choice() }
            // Changed in place: a copied Choice would copy its text, quadratic for a long answer.
            if let text = StreamAssembler.escaped(choice["text"], payload) {
                if choices[index]!.text == nil { choices[index]!.text = [] }
                choices[index]!.text!.append(contentsOf: text)
            }
            if case .string(let range)? = choice["finish_reason"] {
                choices[index]!.finishReason = Array(payload[(range.lowerBound - 1)..<(range.upperBound + 1)])
            }
        }
    }

    public func verdict() -> StreamVerdict {
        let finished = !choices.isEmpty && choices.values.allSatisfy { $0.finishReason != nil }
        return stream.verdict(finished: finished, hasChoices: !choices.isEmpty) { assembled() }
    }

    private func assembled() -> AssembledCompletion {
        var result = AssembledCompletion(head: [], content: [], tail: [], usage: stream.usage.flatMap(StreamAssembler.usageCounts))
        // The first choice's text sits between head and tail, taken or held.
        let first = choices[0]
        let streamed = first?.text != nil
        if streamed {
            result.head = contentTaken > 0 ? [] : Self.contentHead
            result.content = first!.text!
        }
        var tail: [UInt8] = []
        func member(_ name: String, _ raw: [UInt8]?, null: Bool = true) {
            guard raw != nil || null else { return }
            tail += Array(",\"\(name)\":".utf8)
            tail += raw ?? Array("null".utf8)
        }
        func rest(of choice: Choice) {
            member("finish_reason", choice.finishReason)
            tail += Array(#","logprobs":null}"#.utf8)
        }
        var ordered = choices.keys.sorted()
        if streamed {
            tail.append(0x22)
            rest(of: first!)
            ordered.removeAll { $0 == 0 }
        } else {
            tail += Array("{\"choices\":[".utf8)
        }
        for (position, index) in ordered.enumerated() {
            let choice = choices[index]!
            if streamed || position > 0 { tail.append(UInt8(ascii: ",")) }
            tail += Array("{\"index\":\(index),\"text\":\"".utf8)
            tail += choice.text ?? []
            tail.append(0x22)
            rest(of: choice)
        }
        tail.append(UInt8(ascii: "]"))
        tail += stream.closing(object: "text_completion")
        result.tail = tail
        return result
    }
}
