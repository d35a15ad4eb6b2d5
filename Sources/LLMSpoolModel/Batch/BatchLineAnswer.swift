/// Where a batch line's answer goes as it arrives. Pure: the engine asks at each piece of
/// the body and does what it is told.
///
/// A line's answer ends as one line of its batch's output (appended and journalled by the
/// batch runner), so a file of its own in `incoming` is a needless cost: creating and
/// removing one per line was a quarter of the daemon's CPU on a batch of small answers
/// (ext4 scans the inodes freed a moment ago for each new one). The answer is held in
/// memory up to `limit`, and only an answer that outgrows it goes to the line's `.partial`
/// (what is held first, then the rest as it arrives). The raw bytes of a successful event
/// stream the request asked for are read by nothing (its events are assembled as they
/// arrive): they are not kept at all, however long the stream. Nothing here changes what a
/// crash leaves: the line's outcome counts only once its batch's journal has it.
public struct BatchLineAnswer: Sendable, Equatable {
    /// Where the answer is so far.
    public enum Place: Sendable, Equatable {
        case memory
        /// The line's `.partial`, from the piece that passed `limit` on.
        case file
        /// An event stream assembled as it arrives: its raw bytes are not kept.
        case notKept
    }

    /// What to do with the piece that arrived.
    public enum Step: Sendable, Equatable {
        /// Append it to what is held.
        case hold
        /// Create the `.partial`, write what is held and then this piece; the memory is freed.
        case spill
        /// Append it to the `.partial`.
        case write
        /// Keep nothing of it.
        case drop
    }

    /// The most bytes held in memory for one line.
    public let limit: Int
    public private(set) var place: Place = .memory
    /// Bytes held in memory now.
    public private(set) var held = 0

    /// What the single-request path sends from memory, 64 KiB: most answers are far below.
    public static let defaultLimit = 64 * 1024

    /// A `limit` below zero holds nothing: every answer goes to the file.
    public init(limit: Int = BatchLineAnswer.defaultLimit) {
        self.limit = max(0, limit)
    }

    /// Whether the raw body is read by anything once the attempt ends: not for an event
    /// stream the request asked for that came with a 2xx status (judged by its assembled
    /// events alone); yes for every other answer (a plain answer is judged and written from
    /// its bytes, an error's body goes into the record). `contentType` is the response's
    /// header, `status` its code, both known before the first byte of the body.
    public static func rawBodyNeeded(requestedStream: Bool, contentType: String?, status: Int) -> Bool {
        guard requestedStream, (200..<300).contains(status) else { return true }
        return !(contentType?.lowercased().contains("text/event-stream") ?? false)
    }

    /// The next `count` bytes arrived; `rawNeeded` is `rawBodyNeeded` for this response,
    /// the same for every piece of it.
    public mutating func arrive(_ count: Int, rawNeeded: Bool) -> Step {
        let count = max(0, count)
        switch place {
        case .notKept:
            return .drop
        case .file:
            return .write
        case .memory where !rawNeeded:
            // Decided at the first piece: the response's head is complete before its body.
            place = .notKept
            held = 0
            return .drop
        case .memory:
            if count <= limit - held {
                held += count
                return .hold
            }
            place = .file
            held = 0
            return .spill
        }
    }
}
