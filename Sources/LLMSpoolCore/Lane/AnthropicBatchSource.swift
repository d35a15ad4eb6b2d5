/// The body of a group's Message Batch create: `AnthropicBatchAnswers`' framing around each
/// member's Messages body, read from its request file when its turn comes (so one body is
/// in memory at a time). A member's custom_id is `<group>-<index>`, its index in the intent
/// (a member left out, whose request is gone, keeps the others' indices). Each body's compacted
/// size was measured when its member joined the group (as its OpenAI input line, whose
/// framing is known); a request file that no longer gives that body fails the create.
final class AnthropicBatchSource: LaneBodySource {
    let size: Int
    var failure: String? { pieces.failure }
    private let group: String
    private let lines: [LaneUploadSource.Line]
    private let indices: [Int]
    private let bodySizes: [Int]
    private var pieces = LaneBodyPieces()
    /// Tests only (`LaneTestPause`): called once, after the first member's body is sent.
    var afterFirstMember: (() -> Void)?

    /// nil when a measured size is not that of a line for `url`, or the sizes overflow.
    /// `indices` are the lines' members' places in the intent (by default 0, 1, 2…).
    init?(group: String, url: String, lines: [LaneUploadSource.Line], indices: [Int]? = nil) {
        let indices = indices ?? Array(lines.indices)
        guard indices.count == lines.count else { return nil }
        var total = AnthropicBatchAnswers.head.count + AnthropicBatchAnswers.tail.count
        var sizes: [Int] = []
        sizes.reserveCapacity(lines.count)
        for (position, line) in lines.enumerated() {
            let index = indices[position]
            let framing = LaneInputLine.prefix(customID: line.id, url: url).count + LaneInputLine.suffix.count
            guard line.size > framing else { return nil }
            let body = line.size - framing
            let prefix = AnthropicBatchAnswers.memberPrefix(customID: AnthropicBatchAnswers.customID(group: group, index: index), first: position == 0).count
            let (sum, overflow) = total.addingReportingOverflow(body + prefix + AnthropicBatchAnswers.memberSuffix.count)
            guard !overflow else { return nil }
            total = sum
            sizes.append(body)
        }
        size = total
        self.group = group
        self.lines = lines
        self.indices = indices
        bodySizes = sizes
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        pieces.read(into: buffer) { index in piece(index) }
    }

    /// Piece 0 is the head, then one piece per member, then the tail.
    private func piece(_ number: Int) -> LaneBodyPieces.Piece {
        if number == 0 { return .bytes(AnthropicBatchAnswers.head) }
        if number == 2, !lines.isEmpty, let pause = afterFirstMember {
            afterFirstMember = nil
            pause()
        }
        let index = number - 1
        if index < lines.count {
            let line = lines[index]
            do {
                guard let raw = try LaneUploadSource.readBody(path: line.path, range: line.body, identity: line.identity) else {
                    return .failed("\(line.path) changed after it joined the group")
                }
                let body = JSONWriter.compact(raw)
                guard body.count == bodySizes[index] else { return .failed("\(line.path) changed after it joined the group") }
                return .bytes(AnthropicBatchAnswers.memberPrefix(customID: AnthropicBatchAnswers.customID(group: group, index: indices[index]), first: index == 0)
                    + body + AnthropicBatchAnswers.memberSuffix)
            } catch {
                return .failed("reading \(line.path) for the create failed: \(error)")
            }
        }
        return index == lines.count ? .bytes(AnthropicBatchAnswers.tail) : .end
    }
}
