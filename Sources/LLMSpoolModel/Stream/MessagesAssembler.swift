/// Folds an Anthropic Messages event stream (`message_start`, content blocks by index,
/// `message_delta`, `message_stop`) into the `message` a non-streamed call returns. Pure:
/// events in, verdict out. Strings stay as the server escaped them. The text of one text
/// block, nearly all of a long answer, can be taken off in pieces as it grows: the block
/// being streamed once every block before it has stopped.
public struct MessagesAssembler: StreamAssembling {
    struct Block {
        let index: Int
        /// The `content_block` of `content_block_start`, as sent.
        var start: [RawJSON.Member]
        var startBytes: [UInt8]
        let isText: Bool
        /// Escaped text joined from the deltas, without quotes.
        var text: [UInt8]?
        /// The decoded `partial_json` pieces joined: the JSON text of `input`.
        var inputJSON: [UInt8]?
        var thinking: [UInt8]?
        var signature: [UInt8]?
        /// Raw `citation` objects of `citations_delta`.
        var citations: [[UInt8]]?
        var stopped = false
    }

    public private(set) var eventCount = 0
    private var sawStop = false
    private var providerError: (message: String, body: [UInt8])?
    private var malformed: String?
    /// Members of `message_start`'s message, but those the stream fills in.
    private var messageMembers: [(key: String, raw: [UInt8])]?
    private var stopReason: [UInt8] = Array("null".utf8)
    private var stopSequence: [UInt8] = Array("null".utf8)
    private var usage: [(key: String, raw: [UInt8])] = []
    private var blocks: [Block] = []
    /// The position in `blocks` of the text block whose text was taken, once taken.
    private var spilled: Int?
    public private(set) var contentTaken = 0

    public init() {}

    /// The block whose text may be taken: the one taken before, or else the last block when
    /// it is text and every block before it has stopped (nothing before it can change).
    private var spillCandidate: Int? {
        if let spilled { return spilled }
        guard let last = blocks.indices.last, blocks[last].isText, !blocks[last].stopped,
              blocks.dropLast().allSatisfy(\.stopped) else { return nil }
        return last
    }

    public var heldContentCount: Int {
        guard let candidate = spillCandidate else { return 0 }
        return blocks[candidate].text?.count ?? 0
    }

    /// The result's bytes before the taken text; valid when read right before the first
    /// `takeContent()` that hands out bytes.
    public var contentHead: [UInt8] {
        var head = Array(#"{"content":["#.utf8)
        let upTo = spillCandidate ?? blocks.count
        for position in 0..<upTo {
            head += serialised(blocks[position])
            head.append(UInt8(ascii: ","))
        }
        head += Array(#"{"type":"text","text":""#.utf8)
        return head
    }

    public mutating func takeContent() -> [UInt8] {
        guard let candidate = spillCandidate, let text = blocks[candidate].text, !text.isEmpty else { return [] }
        spilled = candidate
        contentTaken += text.count
        blocks[candidate].text = []
        return text
    }

    public func isContent(_ payload: UnsafeRawBufferPointer) -> Bool {
        // A ping is a few bytes; anything long enough to carry text is content.
        guard payload.count < 64, let object = RawJSON.valueIfJSON(payload) else { return true }
        return Self.escaped(object["type"], payload).map { Array($0) } != Array("ping".utf8)
    }

    public mutating func consume(_ event: SSEParser.RawEvent) {
        guard case .data(let payload) = event else { return }
        guard !sawStop, providerError == nil, malformed == nil else { return }
        eventCount += 1
        let object: RawJSON.Value
        switch ChunkStream.object(payload, event: eventCount) {
        case .success(let value): object = value
        case .failure(let problem):
            malformed = problem.message
            return
        }
        let type = Self.escaped(object["type"], payload).map { String(decoding: $0, as: UTF8.self) }
        if type == "error" || (object["error"].map { !$0.isNull } ?? false) {
            let body = Array(payload)
            providerError = (ProviderError.message(inBody: body) ?? "the stream carried an error", body)
            return
        }
        switch type {
        case "ping"?:
            return
        case "message_start"?:
            start(object, payload)
            return
        default:
            break
        }
        guard messageMembers != nil else {
            malformed = "event \(eventCount) (\(type ?? "without a type")) came before message_start"
            return
        }
        switch type {
        case "content_block_start"?: startBlock(object, payload)
        case "content_block_delta"?: delta(object, payload)
        case "content_block_stop"?: stopBlock(object, payload)
        case "message_delta"?: messageDelta(object, payload)
        case "message_stop"?: sawStop = true
        default: break  // event types added later carry nothing the message needs
        }
    }

    private mutating func start(_ object: RawJSON.Value, _ payload: UnsafeRawBufferPointer) {
        guard messageMembers == nil else {
            malformed = "event \(eventCount) is a second message_start"
            return
        }
        guard case .object(let members, _)? = object["message"],
              Self.escaped(object["message"]?["type"], payload).map(Array.init) == Array("message".utf8) else {
            malformed = "event \(eventCount): message_start carries no \"message\" of type message"
            return
        }
        var kept: [(key: String, raw: [UInt8])] = []
        for member in members {
            switch member.key {
            case "content":
                continue
            case "stop_reason":
                stopReason = Array(payload[member.value.range])
            case "stop_sequence":
                stopSequence = Array(payload[member.value.range])
            case "usage":
                mergeUsage(member.value, payload)
            default:
                kept.append((member.key, Array(payload[member.value.range])))
            }
        }
        messageMembers = kept
    }

    private mutating func mergeUsage(_ value: RawJSON.Value, _ payload: UnsafeRawBufferPointer) {
        guard case .object(let members, _) = value else { return }
        for member in members where !member.value.isNull {
            let raw = Array(payload[member.value.range])
            if let existing = usage.firstIndex(where: { $0.key == member.key }) {
                usage[existing].raw = raw
            } else {
                usage.append((member.key, raw))
            }
        }
    }

    /// The position in `blocks` of the block an event names by `index`.
    private mutating func block(_ object: RawJSON.Value, _ payload: UnsafeRawBufferPointer, _ what: String) -> Int? {
        guard let index = StreamAssembler.integer(object["index"], payload) else {
            malformed = "event \(eventCount): \(what) has no integer \"index\""
            return nil
        }
        // Blocks start in increasing index order, so the one named is nearly always the last.
        guard let position = blocks.lastIndex(where: { $0.index == index }) else {
            malformed = "event \(eventCount): \(what) for content block \(index), which has not started"
            return nil
        }
        guard !blocks[position].stopped else {
            malformed = "event \(eventCount): \(what) for content block \(index), which has stopped"
            return nil
        }
        return position
    }

    private mutating func startBlock(_ object: RawJSON.Value, _ payload: UnsafeRawBufferPointer) {
        guard let index = StreamAssembler.integer(object["index"], payload) else {
            malformed = "event \(eventCount): content_block_start has no integer \"index\""
            return
        }
        guard blocks.last.map({ index > $0.index }) ?? true else {
            malformed = "event \(eventCount): content block \(index) started after block \(blocks.last!.index)"
            return
        }
        guard let content = object["content_block"], case .object(let members, let range) = content,
              let type = Self.escaped(content["type"], payload) else {
            malformed = "event \(eventCount): content_block_start has no \"content_block\" with a type"
            return
        }
        // Members are offsets into the payload, which lives only for this call: the block keeps
        // its own copy of the object and offsets rebased to it.
        let bytes = Array(payload[range])
        let rebased = members.map { RawJSON.Member(key: $0.key, value: Self.rebase($0.value, by: range.lowerBound)) }
        let isText = Array(type) == Array("text".utf8)
        var block = Block(index: index, start: rebased, startBytes: bytes, isText: isText)
        if isText, let text = Self.escaped(content["text"], payload), !text.isEmpty { block.text = Array(text) }
        blocks.append(block)
    }

    private mutating func delta(_ object: RawJSON.Value, _ payload: UnsafeRawBufferPointer) {
        guard let position = block(object, payload, "content_block_delta") else { return }
        guard let delta = object["delta"], let type = Self.escaped(delta["type"], payload).map({ String(decoding: $0, as: UTF8.self) }) else {
            malformed = "event \(eventCount): content_block_delta has no \"delta\" with a type"
            return
        }
        // A delta of another kind than its block would be lost when the block is written out.
        let forText = type == "text_delta" || type == "citations_delta"
        let known = forText || ["input_json_delta", "thinking_delta", "signature_delta"].contains(type)
        if known, forText != blocks[position].isText {
            malformed = "event \(eventCount): \(type) for content block \(blocks[position].index), which is \(blocks[position].isText ? "" : "not ")a text block"
            return
        }
        func text(_ key: String) -> UnsafeRawBufferPointer? {
            guard let value = Self.escaped(delta[key], payload) else {
                malformed = "event \(eventCount): \(type) has no string \"\(key)\""
                return nil
            }
            return value
        }
        switch type {
        case "text_delta":
            guard let value = text("text") else { return }
            if blocks[position].text == nil { blocks[position].text = [] }
            blocks[position].text!.append(contentsOf: value)
        case "input_json_delta":
            guard let value = text("partial_json") else { return }
            if blocks[position].inputJSON == nil { blocks[position].inputJSON = [] }
            blocks[position].inputJSON!.append(contentsOf: RawJSON.decodeString(value).utf8)
        case "thinking_delta":
            guard let value = text("thinking") else { return }
            if blocks[position].thinking == nil { blocks[position].thinking = [] }
            blocks[position].thinking!.append(contentsOf: value)
        case "signature_delta":
            guard let value = text("signature") else { return }
            if blocks[position].signature == nil { blocks[position].signature = [] }
            blocks[position].signature!.append(contentsOf: value)
        case "citations_delta":
            guard let citation = delta["citation"], case .object = citation else {
                malformed = "event \(eventCount): citations_delta has no \"citation\" object"
                return
            }
            if blocks[position].citations == nil { blocks[position].citations = [] }
            blocks[position].citations!.append(Array(payload[citation.range]))
        default:
            malformed = "event \(eventCount): content_block_delta of unknown type \"\(type.prefix(100))\""
        }
    }

    private mutating func stopBlock(_ object: RawJSON.Value, _ payload: UnsafeRawBufferPointer) {
        guard let position = block(object, payload, "content_block_stop") else { return }
        if let json = blocks[position].inputJSON, !json.isEmpty {
            do {
                _ = try RawJSON.parse(json)
            } catch {
                malformed = "event \(eventCount): the input of content block \(blocks[position].index) is not JSON (\(error))"
                return
            }
        }
        blocks[position].stopped = true
    }

    private mutating func messageDelta(_ object: RawJSON.Value, _ payload: UnsafeRawBufferPointer) {
        if let delta = object["delta"] {
            if let value = delta["stop_reason"] { stopReason = Array(payload[value.range]) }
            if let value = delta["stop_sequence"] { stopSequence = Array(payload[value.range]) }
        }
        if let value = object["usage"] { mergeUsage(value, payload) }
    }

    public func verdict() -> StreamVerdict {
        if let providerError { return .providerError(message: providerError.message, body: providerError.body) }
        if let malformed { return .malformed(malformed) }
        guard sawStop else {
            return .incomplete("the stream ended before message_stop after \(eventCount) events")
        }
        guard let messageMembers else { return .malformed("message_stop came before message_start") }
        if let open = blocks.first(where: { !$0.stopped }) {
            return .malformed("message_stop came while content block \(open.index) had not stopped")
        }
        var tail: [UInt8] = []
        var document: [UInt8] = []
        if let spilled {
            tail.append(0x22)
            tail += rest(of: blocks[spilled])
            for block in blocks[(spilled + 1)...] {
                tail.append(UInt8(ascii: ","))
                tail += serialised(block)
            }
        } else {
            document = Array(#"{"content":["#.utf8)
            for (position, block) in blocks.enumerated() {
                if position > 0 { document.append(UInt8(ascii: ",")) }
                document += serialised(block)
            }
        }
        var end = Array("]".utf8)
        for member in messageMembers { end += Self.member(member.key, member.raw) }
        end += Self.member("stop_reason", stopReason)
        end += Self.member("stop_sequence", stopSequence)
        var usageObject = Array("{".utf8)
        for (position, member) in usage.enumerated() {
            if position > 0 { usageObject.append(UInt8(ascii: ",")) }
            usageObject += Self.key(member.key) + member.raw
        }
        usageObject.append(UInt8(ascii: "}"))
        end += Self.member("usage", usageObject)
        end.append(UInt8(ascii: "}"))
        let counts = StreamAssembler.usageCounts(usageObject)
        if let spilled {
            return .complete(AssembledCompletion(head: [], content: blocks[spilled].text ?? [], tail: tail + end, usage: counts))
        }
        return .complete(AssembledCompletion(head: document + end, content: [], tail: [], usage: counts))
    }

    /// A block as the `message` has it: the start's members, with what the deltas built in
    /// place of the ones they fill.
    private func serialised(_ block: Block) -> [UInt8] {
        guard block.isText else { return nonText(block) }
        var bytes = Array(#"{"type":"text","text":""#.utf8)
        bytes += block.text ?? []
        bytes.append(0x22)
        return bytes + rest(of: block)
    }

    /// What follows a text block's text, from its closing quote on.
    private func rest(of block: Block) -> [UInt8] {
        var bytes: [UInt8] = []
        for member in block.start where member.key != "type" && member.key != "text" {
            if member.key == "citations", block.citations != nil { continue }
            bytes += Self.member(member.key, Array(block.startBytes[member.value.range]))
        }
        if let citations = block.citations {
            bytes += Self.member("citations", Array("[".utf8) + Array(citations.joined(separator: Array(",".utf8))) + Array("]".utf8))
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private func nonText(_ block: Block) -> [UInt8] {
        var replacements: [(key: String, raw: [UInt8])] = []
        if let json = block.inputJSON { replacements.append(("input", json.isEmpty ? Array("{}".utf8) : json)) }
        if let thinking = block.thinking { replacements.append(("thinking", [0x22] + thinking + [0x22])) }
        if let signature = block.signature { replacements.append(("signature", [0x22] + signature + [0x22])) }
        var bytes = Array("{".utf8)
        var first = true
        func add(_ key: String, _ raw: [UInt8]) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes += Self.key(key) + raw
        }
        for member in block.start {
            if let replacement = replacements.first(where: { $0.key == member.key }) {
                add(member.key, replacement.raw)
            } else {
                add(member.key, Array(block.startBytes[member.value.range]))
            }
        }
        for replacement in replacements where !block.start.contains(where: { $0.key == replacement.key }) {
            add(replacement.key, replacement.raw)
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    static func member(_ key: String, _ raw: [UInt8]) -> [UInt8] {
        [UInt8(ascii: ",")] + Self.key(key) + raw
    }

    /// A member's name as JSON, followed by its colon.
    static func key(_ name: String) -> [UInt8] {
        var bytes: [UInt8] = [0x22]
        for byte in name.utf8 {
            switch byte {
            case 0x22, 0x5C:
                bytes += [0x5C, byte]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default:
                bytes.append(byte)
            }
        }
        return bytes + Array("\":".utf8)
    }

    static func escaped(_ value: RawJSON.Value?, _ payload: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        StreamAssembler.escaped(value, payload)
    }

    /// A value's offsets moved back by `offset`, to index a copy that starts there.
    static func rebase(_ value: RawJSON.Value, by offset: Int) -> RawJSON.Value {
        func shifted(_ range: Range<Int>) -> Range<Int> { (range.lowerBound - offset)..<(range.upperBound - offset) }
        switch value {
        case .object(let members, let range):
            return .object(members.map { RawJSON.Member(key: $0.key, value: rebase($0.value, by: offset)) }, shifted(range))
        case .array(let items, let range):
            return .array(items.map { rebase($0, by: offset) }, shifted(range))
        case .string(let escaped):
            return .string(escaped: shifted(escaped))
        case .number(let range):
            return .number(shifted(range))
        case .bool(let flag, let range):
            return .bool(flag, shifted(range))
        case .null(let range):
            return .null(shifted(range))
        }
    }
}
