/// Splits a server-sent event stream into events, whatever the chunking: a line, an event
/// or a UTF-8 character may be split across reads. Pure: bytes in, events out.
public struct SSEParser: Sendable {
    /// One dispatched event.
    public enum Event: Equatable, Sendable {
        /// The joined `data:` lines of one event.
        case data(String)
        /// A `:` line, used by servers as a keep-alive. It is not content.
        case comment
    }

    /// An event as the parser holds it: the payload is valid only during the callback.
    /// What the event loop uses, so that no String is made per event.
    public enum RawEvent {
        case data(UnsafeRawBufferPointer)
        case comment
    }

    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var afterCR = false
    /// How many bytes of a leading UTF-8 byte order mark were seen; 3 once the stream's
    /// start is past (the event-stream standard ignores one mark at the start).
    private var markBytes = 0
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    public init() {}

    /// Bytes of the event being read that are held until its end: its unfinished line and
    /// its data lines so far.
    public var heldBytes: Int { line.count + data.count }

    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes, _ emit: (Event) -> Void) where Bytes.Element == UInt8 {
        let handled: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            feed(UnsafeRawBufferPointer(buffer), emit)
        }
        if handled == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { feed($0, emit) }
        }
    }

    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (Event) -> Void) {
        feedRaw(bytes) { emit(Self.event($0)) }
    }

    static func event(_ raw: RawEvent) -> Event {
        switch raw {
        case .data(let payload): .data(String(decoding: payload, as: UTF8.self))
        case .comment: .comment
        }
    }

    /// Scans for line ends and copies whole runs between them: big answers are not
    /// handled byte by byte.
    public mutating func feedRaw(_ input: UnsafeRawBufferPointer, _ emit: (RawEvent) -> Void) {
        var bytes = input
        if markBytes < 3 {
            var index = 0
            while markBytes < 3 && index < bytes.count {
                guard bytes[index] == Self.byteOrderMark[markBytes] else {
                    // Not a mark after all: the bytes taken for one are the stream's.
                    let taken = markBytes
                    markBytes = 3
                    if taken > 0 { Self.byteOrderMark.prefix(taken).withUnsafeBytes { feedRaw($0, emit) } }
                    break
                }
                markBytes += 1
                index += 1
            }
            bytes = UnsafeRawBufferPointer(rebasing: bytes[index...])
        }
        // An event's one data line whole in this read is handed out in place at its blank
        // line, not copied into `data` first; kept past this call, it is copied.
        var pending: UnsafeRawBufferPointer?
        defer { if let pending { data.append(contentsOf: pending) } }
        var start = 0
        let count = bytes.count
        while start < count {
            if afterCR {
                afterCR = false
                if bytes[start] == 0x0A {
                    start += 1  // the LF of a CRLF
                    continue
                }
            }
            var end = start
            if let base = bytes.baseAddress {
                // Eight bytes at a time to the word holding the line end: a long answer's
                // events are kilobytes, and the byte loop was a fifth of a 1 GiB stream's CPU.
                while count - end >= 8,
                      !SSEParser.holdsLineEnd(UInt64(littleEndian: (base + end).loadUnaligned(as: UInt64.self))) {
                    end += 8
                }
            }
            while end < count {
                let byte = bytes[end]
                if byte == 0x0A || byte == 0x0D { break }
                end += 1
            }
            guard end < count else {
                if end > start { line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
                return
            }
            afterCR = bytes[end] == 0x0D
            if line.isEmpty {
                // The whole line is in this read (nearly always): taken in place, not copied.
                endLine(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), inPlace: true, pending: &pending, emit)
            } else {
                if end > start { line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
                endHeldLine(pending: &pending, emit)
            }
            start = end + 1
        }
    }

    /// Whether any of eight bytes is a LF or a CR: zero-byte detection on the word XORed
    /// with each, which never misses one (a word it flags is then read byte by byte).
    @inline(__always)
    static func holdsLineEnd(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let lf = word ^ (ones &* 0x0A)
        let cr = word ^ (ones &* 0x0D)
        return (((lf &- ones) & ~lf) | ((cr &- ones) & ~cr)) & 0x8080_8080_8080_8080 != 0
    }

    /// Ends the stream. An event that was not closed by a blank line is still delivered:
    /// some servers end with `data: [DONE]` and no blank line.
    public mutating func finish(_ emit: (Event) -> Void) {
        finishRaw { emit(Self.event($0)) }
    }

    public mutating func finishRaw(_ emit: (RawEvent) -> Void) {
        var pending: UnsafeRawBufferPointer?
        if !line.isEmpty { endHeldLine(pending: &pending, emit) }
        dispatch(pending: &pending, emit)
    }

    /// Ends the line gathered across reads in `line`.
    private mutating func endHeldLine(pending: inout UnsafeRawBufferPointer?, _ emit: (RawEvent) -> Void) {
        var held: [UInt8] = []
        swap(&held, &line)
        held.withUnsafeBytes { endLine($0, inPlace: false, pending: &pending, emit) }
        held.removeAll(keepingCapacity: true)
        swap(&held, &line)
    }

    /// `inPlace`: the line's bytes stay valid until `feedRaw` returns.
    private mutating func endLine(_ line: UnsafeRawBufferPointer, inPlace: Bool, pending: inout UnsafeRawBufferPointer?,
                                  _ emit: (RawEvent) -> Void) {
        if line.isEmpty {
            dispatch(pending: &pending, emit)
            return
        }
        if line[0] == UInt8(ascii: ":") {
            emit(.comment)
            return
        }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.count
        guard colon == 4 && line[0] == UInt8(ascii: "d") && line[1] == UInt8(ascii: "a") && line[2] == UInt8(ascii: "t")
            && line[3] == UInt8(ascii: "a") else { return }  // event:, id:, retry: carry nothing we use
        var valueStart = colon < line.count ? colon + 1 : colon
        if valueStart < line.count && line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[valueStart...])
        if inPlace && !hasData {
            pending = value
            hasData = true
            return
        }
        if let held = pending {
            data.append(contentsOf: held)
            pending = nil
        }
        if hasData { data.append(0x0A) }
        data.append(contentsOf: value)
        hasData = true
    }

    private mutating func dispatch(pending: inout UnsafeRawBufferPointer?, _ emit: (RawEvent) -> Void) {
        guard hasData else { return }
        if let value = pending {
            emit(.data(value))
            pending = nil
        } else {
            data.withUnsafeBytes { emit(.data($0)) }
            data.removeAll(keepingCapacity: true)
        }
        hasData = false
    }
}
