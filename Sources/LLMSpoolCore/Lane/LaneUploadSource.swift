import Glibc

/// The multipart body of a group's upload: `LaneUploadBody`'s head, one input line per
/// member read from its request file when its turn comes (so one line is in memory at a
/// time), and the tail. The members are asked for one at a time (`line`), from the
/// group's own tables: the upload keeps no list of its own. Each line's size was measured when its member joined the group; a
/// request file that no longer gives that line (it changed) fails the upload.
final class LaneUploadSource: LaneBodySource {
    /// One member's line: where its body is, and the line's size as measured.
    struct Line {
        var id: String
        var path: String
        var body: Range<Int>
        var identity: FileIdentity?
        var size: Int
    }

    let size: Int
    var failure: String? { pieces.failure }
    private let url: String
    private let head: [UInt8]
    private let tail: [UInt8]
    private let count: Int
    /// The member at an index, 0 to `count`; nil when it is not at hand any more.
    private let line: (Int) -> Line?
    private var pieces = LaneBodyPieces()
    /// Tests only (`LaneTestPause`): called once, after the first member's line is sent.
    var afterFirstLine: (() -> Void)?

    /// `count` members whose lines' sizes add up to `linesBytes`, each given by `line`
    /// when its turn comes. nil when the sizes do not add up to a body libcurl can be told of.
    init?(group: String, url: String, count: Int, linesBytes: Int, line: @escaping (Int) -> Line?) {
        let body = LaneUploadBody(group: group)
        guard count >= 0, let size = body.size(linesBytes: linesBytes) else { return nil }
        self.size = size
        self.url = url
        self.count = count
        self.line = line
        tail = body.tail
        head = body.head
    }

    /// The members given as a list (nil as well when their sizes overflow).
    convenience init?(group: String, url: String, lines: [Line]) {
        var total = 0
        for line in lines {
            let (sum, overflow) = total.addingReportingOverflow(line.size)
            guard !overflow, line.size >= 0 else { return nil }
            total = sum
        }
        self.init(group: group, url: url, count: lines.count, linesBytes: total) { lines[$0] }
    }

    /// A member's input line as it is sent: the body compacted, so no newline ends the line early.
    static func line(id: String, url: String, body: [UInt8]) -> [UInt8] {
        LaneInputLine.prefix(customID: id, url: url) + JSONWriter.compact(body) + LaneInputLine.suffix
    }

    /// The body bytes of a request file as intake found them; nil when the file is not that file any more.
    static func readBody(path: String, range: Range<Int>, identity: FileIdentity?) throws -> [UInt8]? {
        let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW)
        if let identity, !FileIdentity(try file.fstat()).isSameInstance(as: identity) { return nil }
        let bytes = try Syscall.preadAll(file.rawValue, count: range.count, at: range.lowerBound, path: path)
        return bytes.count == range.count ? bytes : nil
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        pieces.read(into: buffer) { index in piece(index) }
    }

    /// Piece 0 is the head, then one piece per member's line, then the tail.
    private func piece(_ index: Int) -> LaneBodyPieces.Piece {
        if index == 0 { return .bytes(head) }
        if index == 2, count > 0, let pause = afterFirstLine {
            afterFirstLine = nil
            pause()
        }
        let member = index - 1
        if member < count {
            guard let line = line(member) else { return .failed("a member of the group is not at hand for the upload any more") }
            let chunk: [UInt8]
            do {
                guard let body = try LaneUploadSource.readBody(path: line.path, range: line.body, identity: line.identity) else {
                    return .failed("\(line.path) changed after it joined the group")
                }
                chunk = LaneUploadSource.line(id: line.id, url: url, body: body)
            } catch {
                return .failed("reading \(line.path) for the upload failed: \(error)")
            }
            guard chunk.count == line.size else { return .failed("\(line.path) changed after it joined the group") }
            return .bytes(chunk)
        }
        return member == count ? .bytes(tail) : .end
    }
}
