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

    public init() {}

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
    public mutating func feedRaw(_ bytes: UnsafeRawBufferPointer, _ emit: (RawEvent) -> Void) {
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
                endLine(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), emit)
            } else {
                if end > start { line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
                endHeldLine(emit)
            }
            start = end + 1
        }
    }

    /// Ends the stream. An event that was not closed by a blank line is still delivered:
    /// some servers end with `data: [DONE]` and no blank line.
    public mutating func finish(_ emit: (Event) -> Void) {
        finishRaw { emit(Self.event($0)) }
    }

    public mutating func finishRaw(_ emit: (RawEvent) -> Void) {
        if !line.isEmpty { endHeldLine(emit) }
        dispatch(emit)
    }

    /// Ends the line gathered across reads in `line`.
    private mutating func endHeldLine(_ emit: (RawEvent) -> Void) {
        var held: [UInt8] = []
        swap(&held, &line)
        held.withUnsafeBytes { endLine($0, emit) }
        held.removeAll(keepingCapacity: true)
        swap(&held, &line)
    }

    private mutating func endLine(_ line: UnsafeRawBufferPointer, _ emit: (RawEvent) -> Void) {
        if line.isEmpty {
            dispatch(emit)
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
        if hasData { data.append(0x0A) }
        data.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[valueStart...]))
        hasData = true
    }

    private mutating func dispatch(_ emit: (RawEvent) -> Void) {
        guard hasData else { return }
        data.withUnsafeBytes { emit(.data($0)) }
        data.removeAll(keepingCapacity: true)
        hasData = false
    }
}
