/// Validates a batch file line by line as it is read, before anything is sent: every line
/// JSON of one kind, with a `custom_id` unique in the file, its url and body valid for their
/// dialect, within the limits. Holds the offset index and a 64-bit fingerprint per id, never
/// the file or its ids; two ids with the same fingerprint are told apart by reading the
/// earlier line again (`reread`), which only a duplicate or a true collision costs.
public struct BatchValidator {
    /// The limits of one batch file.
    public struct Limits: Sendable, Equatable {
        public var maxLines: Int
        public var maxBytes: Int
        public var maxLineBytes: Int
        public var maxDepth: Int

        public init(maxLines: Int = 1_000_000, maxBytes: Int = 2 << 30, maxLineBytes: Int = 32 << 20,
                    maxDepth: Int = RequestValidator.defaultMaxDepth) {
            self.maxLines = maxLines
            self.maxBytes = maxBytes
            self.maxLineBytes = maxLineBytes
            self.maxDepth = maxDepth
        }
    }

    /// The error record lists at most this many problems; the count says how many there were.
    public static let problemLimit = 100

    public let limits: Limits
    public let fileSize: Int
    public let dialects: [any Dialect]
    public private(set) var index = BatchIndex()
    public private(set) var problems: [BatchProblem] = []
    public private(set) var problemCount = 0
    /// The kind of the file, set by its first valid line.
    public private(set) var kind: BatchKind?
    /// The url of the first valid line (the Batch object's `endpoint`).
    public private(set) var firstURL: String?
    /// Whether reading may stop: the file is refused whatever follows.
    public private(set) var stopped = false
    private var fingerprints: [UInt64: Int32] = [:]
    /// Ids whose fingerprint was taken by a different id: rare enough to hold as text.
    private var collided: [String: Int32] = [:]

    public init(fileSize: Int, limits: Limits = Limits(), dialects: [any Dialect] = DialectRegistry.all) {
        self.fileSize = fileSize
        self.limits = limits
        self.dialects = dialects
        if fileSize > limits.maxBytes {
            record(nil, RequestProblem(.tooLarge, "the batch file has \(fileSize) bytes, more than max_batch_bytes (\(limits.maxBytes))"))
            stopped = true
        }
    }

    /// The verdict once every line has been added.
    public var isValid: Bool { problemCount == 0 && index.count > 0 }

    /// The first problem, for the one-line message; a file without lines has one too.
    public var firstProblem: BatchProblem? {
        problems.first ?? (index.count == 0 ? BatchProblem(line: nil, RequestProblem(.invalidJSON, "the batch file has no lines")) : nil)
    }

    private mutating func record(_ line: Int?, _ problem: RequestProblem) {
        problemCount += 1
        if problems.count < BatchValidator.problemLimit { problems.append(BatchProblem(line: line, problem)) }
    }

    /// A line longer than `maxLineBytes`, which the reader did not keep.
    public mutating func addTooLong(number: Int, length: Int) {
        record(number, RequestProblem(.tooLarge, "the line has \(length) bytes, more than max_request_bytes (\(limits.maxLineBytes))",
                                      line: 1, column: 1))
    }

    /// Adds the line numbered `number` (1-based, in the file), found at `offset`, without its
    /// newline. `reread` gives the `custom_id` of the earlier line at that range of the file
    /// (a range, not the index: a caller holding a copy of the index while it grows would
    /// make every append copy it). A UTF-8 byte order mark opening the file is not part of
    /// its first line. Returns the line's `custom_id` when the line is valid so far (a later
    /// line may still repeat it), for the batch's `BatchIDList`.
    @discardableResult
    public mutating func add(_ line: [UInt8], number: Int, offset: Int, reread: (Range<Int>) -> String?) -> String? {
        guard !stopped else { return nil }
        // Skipped as a request file's mark is, since most JSON readers skip it: the first
        // line's range starts after it, so no later read of the line sends it.
        var line = line
        var offset = offset
        if offset == 0, line.starts(with: RequestValidator.byteOrderMark) {
            line.removeFirst(RequestValidator.byteOrderMark.count)
            offset = RequestValidator.byteOrderMark.count
        }
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return nil }
        guard index.count < limits.maxLines else {
            record(number, RequestProblem(.tooLarge, "the batch file has more than max_batch_lines (\(limits.maxLines)) lines"))
            stopped = true
            return nil
        }
        let entry = index.count
        index.append(offset..<(offset + line.count), line: number)
        switch BatchLine.read(line, at: offset, fileSize: fileSize, maxDepth: limits.maxDepth, dialects: dialects) {
        case .failure(let problem):
            record(number, problem)
            return nil
        case .success(let parsed):
            if let kind, parsed.kind != kind {
                record(number, RequestProblem(.unsupported, "the line is \(parsed.kind.lineName), but the file's first line is \(kind.lineName); a batch file holds one kind", line: 1, column: 1))
                return nil
            }
            if kind == nil {
                kind = parsed.kind
                firstURL = parsed.kind == .anthropic ? BatchLine.anthropicURL : DialectRegistry.dialect(id: parsed.summary.dialect)?.url
            }
            checkUnique(parsed.customID, entry: entry, number: number, reread: reread)
            return parsed.customID
        }
    }

    private mutating func checkUnique(_ id: String, entry: Int, number: Int, reread: (Range<Int>) -> String?) {
        let fingerprint = Fingerprint.hash(id.utf8)
        guard let earlier = fingerprints[fingerprint] else {
            fingerprints[fingerprint] = Int32(entry)
            return
        }
        if let other = collided[id] {
            duplicate(id, of: Int(other), number: number)
            return
        }
        if reread(index.range(Int(earlier))) == id {
            duplicate(id, of: Int(earlier), number: number)
        } else {
            collided[id] = Int32(entry)
        }
    }

    private mutating func duplicate(_ id: String, of entry: Int, number: Int) {
        record(number, RequestProblem(.unsupported, "\"custom_id\" \"\(RequestEnvelope.shown(id))\" is also that of line \(index.lineNumber(entry)); each line needs its own", line: 1, column: 1))
    }
}
