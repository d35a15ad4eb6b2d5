/// The `custom_id`s of a batch's lines in entry order, `state/batches/<name>.ids`: written
/// while the batch is validated, renamed into place once its journal exists, removed at its
/// end. A batch whose input left while no daemon ran it (its owner killed or stopped, then
/// the input deleted) is cancelled by whichever daemon finds its journal, and the lines
/// never committed can be named in its output only from here: the input's bytes are gone.
///
/// Kept instead of a hard link to the input: a second name would make the input fail the
/// one-link rule that intake and every line's send apply (`RequestFile`, `UploadCheck`),
/// link(2) fails on some network filesystems, and the ids are a few percent of the bytes.
///
/// Text: `llmspool-batch-ids 1`, then one JSON string per line, then a trailer naming the
/// input they were read from (its lines and identity, as the journal's header records
/// them), so that a list left by an older file under the name is never taken for this one's.
public enum BatchIDList {
    static let magic = "llmspool-batch-ids 1"
    static let trailerMagic = "llmspool-batch-ids-of"

    /// Why a list cannot be used.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case notAList
        /// Entry `n`'s line is not a JSON string.
        case badLine(entry: Int)
        /// The trailer names another input (an older file under the name), or other lines.
        case otherInput
        /// It ends before its trailer (or holds more ids than the journal's lines).
        case incomplete(ids: Int, lines: Int)
        case bytesAfterTrailer

        public var description: String {
            switch self {
            case .notAList: "it is not a list of custom_ids"
            case .badLine(let entry): "its line for entry \(entry) is not a JSON string"
            case .otherInput: "it was read from another file under the batch's name"
            case .incomplete(let ids, let lines): "it holds \(ids) custom_ids without its end, for \(lines) lines"
            case .bytesAfterTrailer: "it has bytes after its end"
            }
        }
    }

    public static var opening: [UInt8] { Array((magic + "\n").utf8) }

    public static func encode(_ customID: String) -> [UInt8] { JSONWriter.quoted(customID) + [0x0A] }

    /// The last line: the input the list was read from, as `header` (the journal's) records it.
    public static func trailer(for header: BatchJournal.Header) -> [UInt8] {
        let input = header.input
        let fields = [trailerMagic, String(header.lines), String(input.device), String(input.inode), String(input.size),
                      String(input.modifiedNanoseconds), input.bornNanoseconds.map { String($0) } ?? "-",
                      input.contentHash.map { String($0) } ?? "-"]
        return Array(fields.joined(separator: " ").utf8) + [0x0A]
    }

    /// Whether a list whose last bytes are `tail` (at least the trailer's length, when the
    /// list is that long) was finished for the input `header` names: a journal copied from
    /// another batch, or restored without its list, has no list that ends so.
    public static func ends(_ tail: ArraySlice<UInt8>, for header: BatchJournal.Header) -> Bool {
        let trailer = trailer(for: header)
        return tail.count >= trailer.count && tail.suffix(trailer.count).elementsEqual(trailer)
    }

    /// The batch whose list (or unfinished temporary of one) a file of `state/batches` is;
    /// nil for any other file.
    public static func batchName(ofFile file: String) -> String? {
        let suffix = SpoolLayout.batchIDListSuffix
        let temporary = suffix + SpoolLayout.temporarySuffix
        if file.hasPrefix(SpoolLayout.hiddenPrefix) {
            guard file.hasSuffix(temporary), file.count > 1 + temporary.count else { return nil }
            let name = String(file.dropFirst(1).dropLast(temporary.count))
            return name.hasPrefix(SpoolLayout.hiddenPrefix) ? nil : name
        }
        guard file.hasSuffix(suffix), file.count > suffix.count else { return nil }
        return String(file.dropLast(suffix.count))
    }

    /// The ids of some entries, read from a list a chunk at a time: a running batch's lines
    /// whose input no longer holds them at their offsets (cut short or rewritten in place)
    /// are named from here. None is given unless the list is whole and this input's.
    public struct Lookup: Sendable {
        var reader: Reader
        let wanted: Set<Int>
        var found: [Int: String] = [:]

        public init(header: BatchJournal.Header, entries: Set<Int>, maxLineBytes: Int = 32 << 20) {
            reader = Reader(header: header, maxLineBytes: maxLineBytes)
            wanted = entries
        }

        public mutating func add(_ chunk: some Collection<UInt8>) {
            for (entry, id) in reader.add(chunk) where wanted.contains(entry) { found[entry] = id }
        }

        public mutating func finish() -> Result<[Int: String], Problem> {
            if let problem = reader.finish() { return .failure(problem) }
            return .success(found)
        }
    }

    /// Reads a list a chunk at a time and checks it against the journal's header: every id
    /// in entry order, then the trailer of the same input, then nothing. A caller that acts
    /// on the ids reads the list through once first, to know it whole.
    public struct Reader: Sendable {
        public let lines: Int
        let trailer: [UInt8]
        /// The longest line taken: an id escaped for JSON is no longer than the batch line it
        /// came from (`max_request_bytes`), and a longer one is damage, not held in memory.
        let maxLineBytes: Int
        var pending: [UInt8] = []
        var opened = false
        var ended = false
        /// The ids read so far: the next id's entry.
        public private(set) var count = 0
        public private(set) var problem: Problem?

        public init(header: BatchJournal.Header, maxLineBytes: Int = 32 << 20) {
            self.maxLineBytes = max(64, maxLineBytes) + 3
            lines = header.lines
            trailer = BatchIDList.trailer(for: header)
        }

        /// The ids whose lines end in `chunk`, with their entries; none once a problem is found.
        public mutating func add(_ chunk: some Collection<UInt8>) -> [(entry: Int, customID: String)] {
            var found: [(entry: Int, customID: String)] = []
            guard problem == nil else { return found }
            for byte in chunk {
                guard byte == 0x0A else {
                    pending.append(byte)
                    if pending.count > maxLineBytes {
                        problem = count == 0 && !opened ? .notAList : .badLine(entry: count)
                        return []
                    }
                    continue
                }
                pending.append(byte)
                defer { pending.removeAll(keepingCapacity: true) }
                if let id = line(pending) {
                    found.append((count, id))
                    count += 1
                }
                if problem != nil { return [] }
            }
            return found
        }

        /// nil when the list was whole and is this input's.
        public mutating func finish() -> Problem? {
            if problem == nil, !pending.isEmpty { problem = ended ? .bytesAfterTrailer : opened ? .incomplete(ids: count, lines: lines) : .notAList }
            if problem == nil, !ended { problem = opened ? .incomplete(ids: count, lines: lines) : .notAList }
            return problem
        }

        /// One whole line, its newline included: an id, or nil for the opening and trailer.
        private mutating func line(_ bytes: [UInt8]) -> String? {
            if ended {
                problem = .bytesAfterTrailer
                return nil
            }
            if !opened {
                guard bytes == BatchIDList.opening else {
                    problem = .notAList
                    return nil
                }
                opened = true
                return nil
            }
            if bytes.first == 0x22 {
                guard count < lines else {
                    problem = .incomplete(ids: count + 1, lines: lines)
                    return nil
                }
                let text = Array(bytes.dropLast())
                guard let value = RawJSON.valueIfJSON(text), let id = RawJSON.string(value, in: text) else {
                    problem = .badLine(entry: count)
                    return nil
                }
                return id
            }
            guard bytes.starts(with: Array((BatchIDList.trailerMagic + " ").utf8)) else {
                problem = .badLine(entry: count)
                return nil
            }
            guard bytes == trailer else {
                problem = .otherInput
                return nil
            }
            guard count == lines else {
                problem = .incomplete(ids: count, lines: lines)
                return nil
            }
            ended = true
            return nil
        }
    }
}
