/// The starts of attempts on a local spool, appended to `state/.starts` before each request
/// is sent, in place of a task record written at every start. A start record (a file
/// created, written and renamed) was a tenth of a streamed request's CPU and a fifth of a
/// small one's; an append is one `write`. Only a crash needs what it said (`CrashGuard`:
/// how many starts of a request never ended), so the restart after a crash turns the starts
/// that never ended into the records they stand for, and any other start drops the journal.
///
/// Only the first start of a request that had no record when it was read goes here: any
/// record on disk (a retry's, a crash count carried from an earlier run, a cancellation's, an
/// earlier file's of the same name) is overwritten at the start as before, so that a record
/// found after a journaled start was written after it, and ended it.
///
/// A frame is `<record length> <name length>\n<name><record>`: the request's file name in
/// `outgoing`, then the record a start used to write. The journal has two generations: when
/// the current one (`.starts`) has taken enough frames it becomes `.starts.old` and a new one
/// begins with the frames of the starts not ended yet, so that the journal stays about as
/// long as what is in flight while a start is never dropped before it ended. Pure.
public enum StartJournal {
    /// A frame longer than this is not one of the daemon's (a record is a few KiB at most).
    public static let maxFrameBytes = 4 << 20

    /// One start, as read back.
    public struct Frame: Sendable, Equatable {
        /// The request's file name in `outgoing` (`<id>.json`, `<id>.md`, ...).
        public let name: String
        /// The encoded task record the start stands for.
        public let record: [UInt8]

        public init(name: String, record: [UInt8]) {
            self.name = name
            self.record = record
        }
    }

    /// The bytes appended for one start.
    public static func frame(name: String, record: [UInt8]) -> [UInt8] {
        let nameBytes = Array(name.utf8)
        var bytes = Array("\(record.count) \(nameBytes.count)\n".utf8)
        bytes.reserveCapacity(bytes.count + nameBytes.count + record.count)
        bytes += nameBytes
        bytes += record
        return bytes
    }

    /// The frames of a journal, in order. Reading stops at the first frame that is not whole
    /// or not well formed: the tail a power loss cut, or zeros it left.
    public static func frames(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        _ = scan(bytes) { frames.append($0) }
        return frames
    }

    /// What the replay reads of the journal's generations, oldest first: the last frame of each
    /// request file named in them (one kept per name, so a journal of millions of tiny frames
    /// costs memory by its names, not its frames), and how many bytes of each were not frames.
    public static func lastStarts(in generations: [[UInt8]]) -> (starts: [Frame], unread: [Int]) {
        var index: [String: Int] = [:]
        var starts: [Frame] = []
        var unread: [Int] = []
        for bytes in generations {
            unread.append(scan(bytes) { frame in
                if let at = index[frame.name] {
                    starts[at] = frame
                } else {
                    index[frame.name] = starts.count
                    starts.append(frame)
                }
            })
        }
        return (starts, unread)
    }

    /// Calls `body` with each frame in order; returns how many bytes after the last were not one.
    private static func scan(_ bytes: [UInt8], _ body: (Frame) -> Void) -> Int {
        var position = 0
        while position < bytes.count {
            guard let newline = bytes[position..<min(bytes.count, position + 25)].firstIndex(of: 0x0A) else { break }
            let header = String(decoding: bytes[position..<newline], as: UTF8.self).split(separator: " ")
            guard header.count == 2, let recordLength = Int(header[0]), let nameLength = Int(header[1]),
                  recordLength > 0, nameLength > 0, recordLength <= maxFrameBytes, nameLength <= 4096 else { break }
            let nameStart = newline + 1
            guard bytes.count - nameStart >= nameLength + recordLength else { break }
            let recordStart = nameStart + nameLength
            body(Frame(name: String(decoding: bytes[nameStart..<recordStart], as: UTF8.self),
                       record: Array(bytes[recordStart..<(recordStart + recordLength)])))
            position = recordStart + recordLength
        }
        return bytes.count - position
    }

    /// Whether a frame's record may stand for its name: the record's id is the id of the
    /// request file the frame names. A journal is the daemon's own, but a record written
    /// from it must never land outside `state/` or under another id.
    public static func recordMatches(name: String, id: String) -> Bool {
        guard case .request(let named) = RequestName.classify(name) else { return false }
        return named == id
    }

    /// What a restart after a crash does with the last start journaled for a request.
    public enum Fate: Sendable, Equatable {
        /// The start never ended: its record is written, counting it.
        case write
        /// A record of the very file was written after it: an outcome, a retry, a cancellation.
        case ended
        /// The request that started is no longer in `outgoing` (or another file has its name).
        case gone
    }

    /// `started` is the record the start stood for, `current` the record on disk now, and
    /// `requestIsTheOneStarted` whether `outgoing` still holds the very file that started.
    /// A journaled start had no record on disk (see above), so any record of that file now
    /// was written after it.
    public static func fate(started: TaskRecord, current: TaskRecord?, requestIsTheOneStarted: Bool) -> Fate {
        guard requestIsTheOneStarted else { return .gone }
        guard let current, let startedRequest = started.request,
              current.request.map({ $0.isSameInstance(as: startedRequest) }) == true else { return .write }
        return .ended
    }

    /// Whether a start goes to the journal: the first start (no attempt, no count carried
    /// from a crash) of a request that had no record when it was read.
    public static func takes(recordless: Bool, history: TaskHistory) -> Bool {
        recordless && history.attempts.isEmpty && history.unfinishedStarts <= 1
    }

    /// Whether the current generation has taken enough frames to begin a new one: a few
    /// thousand at least, and twice what is in flight, so that the frames copied into the
    /// new generation cost at most half a frame for each start.
    public static func isTimeToTurn(framesSinceTurn: Int, inFlight: Int) -> Bool {
        framesSinceTurn >= max(4096, 2 * inFlight)
    }
}
