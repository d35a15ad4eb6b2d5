/// The journal of one running batch, `state/batches/<name>.journal`: a header naming the
/// input file, then one entry per committed line, appended in the order of the output and
/// fsynced in groups after the output lines they commit. It is the commit point of each
/// line: a line is done once its entry is durable, and the output's length is that of the
/// last entry, so a restart cuts the output back to it and sends only the lines not in it.
///
/// Text, one record per line: `llmspool-batch 1 <kind> <lines> <created> <device> <inode>
/// <size> <mtime-ns> <birth-ns or -> <hash or -> <endpoint>`, then `<entry> <s|f|c|e> <output-end>
/// <input-tokens> <output-tokens>`, and between them the failed attempts of lines not ended
/// (`BatchLineAttempts`). A torn last record (a crash during the append) is not
/// an entry; `validLength` says where the journal is cut to before it grows again.
public struct BatchJournal: Sendable, Equatable {
    /// The header: what the journal is about.
    public struct Header: Sendable, Equatable {
        public var kind: BatchKind
        /// The number of lines (entries of the index).
        public var lines: Int
        /// When the batch was accepted, seconds since 1970.
        public var createdAt: Int
        public var input: FileIdentity
        /// The url of the first line (the summary's `endpoint`).
        public var endpoint: String

        public init(kind: BatchKind, lines: Int, createdAt: Int, input: FileIdentity, endpoint: String) {
            self.endpoint = endpoint
            self.kind = kind
            self.lines = lines
            self.createdAt = createdAt
            self.input = input
        }
    }

    /// One committed line.
    public struct Entry: Sendable, Equatable {
        public var entry: Int
        public var code: UInt8
        /// The output's length once this line's output is in it.
        public var outputEnd: Int
        public var inputTokens: Int
        public var outputTokens: Int

        public init(entry: Int, code: UInt8, outputEnd: Int, inputTokens: Int = 0, outputTokens: Int = 0) {
            self.entry = entry
            self.code = code
            self.outputEnd = outputEnd
            self.inputTokens = inputTokens
            self.outputTokens = outputTokens
        }
    }

    static let magic = "llmspool-batch"

    public var header: Header
    public var committed: BatchLineSet
    public var counts = BatchCounts()
    /// The output's committed length.
    public var outputLength = 0
    /// The journal's bytes up to its last whole record.
    public var validLength = 0
    /// The attempts of lines retried and not committed yet, by entry.
    public var attempts: [Int: BatchLineAttempts] = [:]

    public init(header: Header) {
        self.header = header
        committed = BatchLineSet(count: header.lines)
    }

    public static func encode(_ header: Header) -> [UInt8] {
        let input = header.input
        let fields = [magic, "1", header.kind.rawValue, String(header.lines), String(header.createdAt), String(input.device),
                      String(input.inode), String(input.size), String(input.modifiedNanoseconds),
                      input.bornNanoseconds.map { String($0) } ?? "-", input.contentHash.map { String($0) } ?? "-",
                      header.endpoint.isEmpty || header.endpoint.contains(" ") ? "-" : header.endpoint]
        return Array(fields.joined(separator: " ").utf8) + [0x0A]
    }

    public static func encode(_ entry: Entry) -> [UInt8] {
        Array("\(entry.entry) \(Character(UnicodeScalar(entry.code))) \(entry.outputEnd) \(entry.inputTokens) \(entry.outputTokens)\n".utf8)
    }

    /// Applies a committed entry, as replaying its record would.
    public mutating func apply(_ entry: Entry) {
        guard entry.entry >= 0, entry.entry < header.lines, !committed.contains(entry.entry) else { return }
        committed.insert(entry.entry)
        attempts[entry.entry] = nil
        counts.add(code: entry.code, inputTokens: entry.inputTokens, outputTokens: entry.outputTokens)
        outputLength = max(outputLength, entry.outputEnd)
    }

    /// Applies a line's failed attempts, as replaying their record would; a committed line's are moot.
    public mutating func apply(entry: Int, _ attempts: BatchLineAttempts) {
        guard entry >= 0, entry < header.lines, !committed.contains(entry) else { return }
        self.attempts[entry] = attempts
    }

    /// Reads a journal's bytes; nil when its header is not whole or not a journal's (the
    /// batch then starts again from zero).
    public static func replay(_ bytes: [UInt8]) -> BatchJournal? {
        guard let headerEnd = bytes.firstIndex(of: 0x0A), let header = header(bytes[..<headerEnd]) else { return nil }
        var journal = BatchJournal(header: header)
        var start = headerEnd + 1
        journal.validLength = start
        while start < bytes.count, let end = bytes[start...].firstIndex(of: 0x0A), journal.apply(record: bytes[start..<end]) {
            start = end + 1
            journal.validLength = start
        }
        return journal
    }

    /// The header of a journal from its first line (without the newline); nil when it is
    /// not a journal's.
    public static func header(_ line: ArraySlice<UInt8>) -> Header? {
        let fields = String(decoding: line, as: UTF8.self).split(separator: " ").map(String.init)
        guard fields.count == 12, fields[0] == magic, fields[1] == "1", let kind = BatchKind(rawValue: fields[2]),
              let lines = Int(fields[3]), lines >= 0, lines <= 1 << 31, let created = Int(fields[4]),
              let device = UInt64(fields[5]), let inode = UInt64(fields[6]), let size = Int64(fields[7]), let modified = Int64(fields[8]) else {
            return nil
        }
        let input = FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modified,
                                 bornNanoseconds: Int64(fields[9]), contentHash: UInt64(fields[10]))
        return Header(kind: kind, lines: lines, createdAt: created, input: input, endpoint: fields[11] == "-" ? "" : fields[11])
    }

    /// Applies one record after the header (without its newline): a line's entry or its
    /// failed attempts. False when it is neither (a torn record ends the journal there).
    public mutating func apply(record: ArraySlice<UInt8>) -> Bool {
        let parts = record.split(separator: 0x20)
        func int(_ index: Int) -> Int? { Int(String(decoding: parts[index], as: UTF8.self)) }
        if parts.count == 4, parts[0].elementsEqual([BatchLineAttempts.marker]) {
            guard let entry = int(1), let count = int(2), count >= 0, let notBefore = int(3) else { return false }
            apply(entry: entry, BatchLineAttempts(count: count, notBeforeMilliseconds: notBefore))
            return true
        }
        guard parts.count == 5, parts[1].count == 1, let entry = int(0), let outputEnd = int(2), outputEnd >= outputLength,
              let input = int(3), let output = int(4) else { return false }
        apply(Entry(entry: entry, code: parts[1].first!, outputEnd: outputEnd, inputTokens: input, outputTokens: output))
        return true
    }
}

/// The lines of a batch as bits: a million lines in 125 KB.
public struct BatchLineSet: Sendable, Equatable {
    private var words: [UInt64]
    /// The lines it can hold: 0 up to this.
    public let capacity: Int
    public private(set) var count = 0

    public init(count lines: Int) {
        capacity = max(0, lines)
        words = [UInt64](repeating: 0, count: (capacity + 63) / 64)
    }

    public func contains(_ line: Int) -> Bool {
        line >= 0 && line < capacity && words[line / 64] & (1 << UInt64(line % 64)) != 0
    }

    public mutating func insert(_ line: Int) {
        guard line >= 0, line < capacity, !contains(line) else { return }
        words[line / 64] |= 1 << UInt64(line % 64)
        count += 1
    }
}

/// What the lines of a batch came to, and the tokens they used.
public struct BatchCounts: Sendable, Equatable {
    public var succeeded = 0
    public var failed = 0
    public var cancelled = 0
    public var expired = 0
    public var inputTokens = 0
    public var outputTokens = 0

    public init() {}

    public var ended: Int { succeeded + failed + cancelled + expired }
    /// OpenAI's `failed` count: every line that did not succeed.
    public var notSucceeded: Int { failed + cancelled + expired }

    public mutating func add(code: UInt8, inputTokens: Int, outputTokens: Int) {
        switch code {
        case UInt8(ascii: "s"): succeeded += 1
        case UInt8(ascii: "c"): cancelled += 1
        case UInt8(ascii: "e"): expired += 1
        default: failed += 1
        }
        // Counts from a server are clamped: no number may overflow the totals.
        self.inputTokens = self.inputTokens.addingReportingOverflow(max(0, inputTokens)).overflow ? Int.max : self.inputTokens + max(0, inputTokens)
        self.outputTokens = self.outputTokens.addingReportingOverflow(max(0, outputTokens)).overflow ? Int.max : self.outputTokens + max(0, outputTokens)
    }

    /// The input and output tokens of an answer's usage, whichever dialect's names it uses.
    public static func tokens(of usage: [String: Int]?) -> (input: Int, output: Int) {
        guard let usage else { return (0, 0) }
        return (usage["prompt_tokens"] ?? usage["input_tokens"] ?? 0, usage["completion_tokens"] ?? usage["output_tokens"] ?? 0)
    }
}
