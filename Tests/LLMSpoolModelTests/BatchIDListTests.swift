import Foundation
import Testing
@testable import LLMSpoolModel

/// The list of a batch's custom_ids, which names the lines of a batch cancelled once its
/// input is gone: read whole and checked against the journal before any id is used.
@Suite struct BatchIDListTests {
    static let input = FileIdentity(device: 3, inode: 44, size: 5000, modifiedNanoseconds: 1_700_000_000_123_456_789,
                                    bornNanoseconds: nil, contentHash: 0xfeed)
    static func header(lines: Int = 3, input: FileIdentity = input, kind: BatchKind = .openai) -> BatchJournal.Header {
        BatchJournal.Header(kind: kind, lines: lines, createdAt: 1000, input: input, endpoint: "/v1/chat/completions")
    }

    static func list(_ ids: [String], header: BatchJournal.Header = header()) -> [UInt8] {
        BatchIDList.opening + ids.flatMap(BatchIDList.encode) + BatchIDList.trailer(for: header)
    }

    /// Reads `bytes` in chunks of `size`, as the daemon reads a megabyte at a time.
    static func read(_ bytes: [UInt8], chunk size: Int, header: BatchJournal.Header = header())
        -> (ids: [(entry: Int, customID: String)], problem: BatchIDList.Problem?) {
        var reader = BatchIDList.Reader(header: header)
        var ids: [(entry: Int, customID: String)] = []
        var start = 0
        while start < bytes.count {
            ids += reader.add(bytes[start..<min(bytes.count, start + size)])
            start += size
        }
        return (ids, reader.finish())
    }

    @Test func everyIdComesBackInEntryOrderWhateverTheChunks() {
        // Ids that need escaping, and one with a character of four UTF-8 bytes split by chunks.
        let ids = ["plain", "with \"quotes\" and \\ and\nnewline\ttab \u{1}", "emoji \u{1F600} é"]
        let bytes = Self.list(ids)
        for size in [1, 2, 3, 7, 64, bytes.count] {
            let (found, problem) = Self.read(bytes, chunk: size)
            #expect(problem == nil, "chunks of \(size)")
            #expect(found.map(\.customID) == ids, "chunks of \(size)")
            #expect(found.map(\.entry) == [0, 1, 2])
        }
    }

    @Test func aListOfAnotherInputIsRefused() {
        let other = FileIdentity(device: 3, inode: 45, size: 5000, modifiedNanoseconds: Self.input.modifiedNanoseconds, contentHash: 0xfeed)
        #expect(Self.read(Self.list(["a", "b", "c"], header: Self.header(input: other)), chunk: 5).problem == .otherInput)
        let rewritten = Self.input.with(contentHash: 0xbeef)
        #expect(Self.read(Self.list(["a", "b", "c"], header: Self.header(input: rewritten)), chunk: 5).problem == .otherInput,
                "the same inode with other content")
        #expect(Self.read(Self.list(["a", "b"], header: Self.header(lines: 2)), chunk: 5).problem == .otherInput,
                "a journal of another number of lines")
    }

    @Test func aListCutShortAnywhereIsRefused() {
        let whole = Self.list(["a", "b", "c"])
        for cut in 0..<whole.count {
            let (_, problem) = Self.read(Array(whole.prefix(cut)), chunk: 4)
            #expect(problem != nil, "cut at \(cut) of \(whole.count)")
        }
        #expect(Self.read(whole, chunk: 4).problem == nil)
    }

    @Test func tooFewOrTooManyIdsAreRefused() {
        #expect(Self.read(Self.list(["a", "b"]), chunk: 8).problem == .incomplete(ids: 2, lines: 3))
        #expect(Self.read(Self.list(["a", "b", "c", "d"]), chunk: 8).problem == .incomplete(ids: 4, lines: 3))
    }

    @Test func damageIsFound() {
        let opening = BatchIDList.opening
        let trailer = BatchIDList.trailer(for: Self.header())
        #expect(Self.read(Array("something else\n".utf8), chunk: 8).problem == .notAList)
        #expect(Self.read([], chunk: 8).problem == .notAList)
        #expect(Self.read(opening + Array("\"a\"\n\"b\n\"c\"\n".utf8) + trailer, chunk: 8).problem == .badLine(entry: 1))
        #expect(Self.read(opening + Array("\"a\"\nb\n\"c\"\n".utf8) + trailer, chunk: 8).problem == .badLine(entry: 1))
        #expect(Self.read(Self.list(["a", "b", "c"]) + Array("\"d\"\n".utf8), chunk: 8).problem == .bytesAfterTrailer)
        #expect(Self.read(Self.list(["a", "b", "c"]) + Array("x".utf8), chunk: 8).problem == .bytesAfterTrailer)
    }

    @Test func aLineLongerThanAnyBatchLineIsDamageNotHeld() {
        var reader = BatchIDList.Reader(header: Self.header(lines: 2), maxLineBytes: 64)
        _ = reader.add(BatchIDList.opening + BatchIDList.encode(String(repeating: "i", count: 64)))
        #expect(reader.problem == nil, "an id as long as a batch line")
        _ = reader.add(Array(repeating: UInt8(ascii: "x"), count: 200))
        #expect(reader.problem == .badLine(entry: 1))
    }

    @Test func noIdIsGivenOnceAProblemIsFound() {
        var reader = BatchIDList.Reader(header: Self.header())
        #expect(reader.add(Array("nonsense\n\"a\"\n".utf8)).isEmpty)
        #expect(reader.add(Array("\"b\"\n".utf8)).isEmpty)
        #expect(reader.finish() == .notAList)
    }

    @Test func aLookupNamesTheEntriesAskedForOnlyFromAWholeListOfThisInput() throws {
        var lookup = BatchIDList.Lookup(header: Self.header(), entries: [0, 2])
        for byte in Self.list(["a", "b", "c"]) { lookup.add([byte]) }
        #expect(try lookup.finish().get() == [0: "a", 2: "c"])
        var cut = BatchIDList.Lookup(header: Self.header(), entries: [0])
        cut.add(Self.list(["a", "b", "c"]).dropLast())
        #expect(throws: BatchIDList.Problem.self, "a list cut short names nothing") { try cut.finish().get() }
        let other = Self.input.with(contentHash: 0xbeef)
        var another = BatchIDList.Lookup(header: Self.header(), entries: [1])
        another.add(Self.list(["a", "b", "c"], header: Self.header(input: other)))
        #expect(throws: BatchIDList.Problem.otherInput) { try another.finish().get() }
    }

    @Test func theFilesOfAListAreKnownByName() {
        let layout = SpoolLayout(root: "/spool")
        #expect(layout.batchIDList("run") == "/spool/state/batches/run.ids")
        #expect(BatchIDList.batchName(ofFile: "run.ids") == "run")
        #expect(BatchIDList.batchName(ofFile: "run.v2.ids") == "run.v2")
        #expect(BatchIDList.batchName(ofFile: ".run.ids.tmp") == "run", "an unfinished list")
        #expect(SpoolLayout.temporary(for: layout.batchIDList("run")) == "/spool/state/batches/.run.ids.tmp")
        for other in ["run.journal", ".ids", "ids", ".ids.tmp", "..x.ids.tmp", "run.ids.tmp", ".run.journal.tmp", "run.idsx"] {
            #expect(BatchIDList.batchName(ofFile: other) == nil, "\(other)")
        }
    }
}

/// How a batch whose input is gone is ended: every line in its output when its list is
/// there, else (and said so) the lines it committed.
@Suite struct BatchOrphanNamingTests {
    @Test func aUsableListNamesEveryLine() {
        #expect(BatchOrphanRules.naming(listPresent: true, listProblem: nil) == .idList)
    }

    @Test func withoutAUsableListTheCommittedLinesAreAllThereIs() {
        guard case .committedOnly(let reason) = BatchOrphanRules.naming(listPresent: false, listProblem: nil) else {
            Issue.record("no list, yet the lines are named")
            return
        }
        #expect(reason.contains("not kept"))
        for problem: BatchIDList.Problem in [.notAList, .otherInput, .badLine(entry: 4), .incomplete(ids: 1, lines: 3), .bytesAfterTrailer] {
            guard case .committedOnly(let reason) = BatchOrphanRules.naming(listPresent: true, listProblem: problem) else {
                Issue.record("a damaged list was used: \(problem)")
                continue
            }
            #expect(reason.hasSuffix(problem.description))
        }
    }

    static func journal(kind: BatchKind = .openai, lines: Int, committed: [Int]) throws -> BatchJournal {
        var journal = BatchJournal(header: BatchIDListTests.header(lines: lines, kind: kind))
        var end = 0
        for entry in committed {
            end += 100
            journal.apply(BatchJournal.Entry(entry: entry, code: UInt8(ascii: "s"), outputEnd: end))
        }
        return journal
    }

    @Test func theLinesNeverCommittedAreCancelledOnceEachAfterTheCommittedOutput() throws {
        let journal = try Self.journal(lines: 5, committed: [1, 3])
        let ids = [(0, "a"), (1, "b"), (2, "c"), (2, "c"), (3, "d"), (4, "e"), (7, "beyond")].map { (entry: $0.0, customID: $0.1) }
        let (output, entries) = BatchOrphanRules.cancelledGroup(ids, journal: journal, batch: "orphan")
        #expect(entries.map(\.entry) == [0, 2, 4], "committed lines, a repeat and an entry beyond the batch are skipped")
        #expect(entries.allSatisfy { $0.code == UInt8(ascii: "c") })
        #expect(entries.last?.outputEnd == journal.outputLength + output.count)
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 3)
        for (line, (entry, id)) in zip(lines, [(0, "a"), (2, "c"), (4, "e")]) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["custom_id"] as? String == id)
            #expect(object["id"] as? String == BatchOutputLine.requestID(batch: "orphan", entry: entry))
            #expect(object["response"] is NSNull)
            #expect((object["error"] as? [String: Any])?["code"] as? String == "batch_cancelled")
        }
        // Each entry's end is where its own line ends: a crash after any of them cuts the output right.
        var end = journal.outputLength
        for (entry, line) in zip(entries, lines) {
            end += line.utf8.count + 1
            #expect(entry.outputEnd == end)
        }
        var replayed = journal
        for entry in entries { replayed.apply(entry) }
        #expect(replayed.committed.count == 5)
        #expect(replayed.counts.cancelled == 3 && replayed.counts.succeeded == 2)
        #expect(BatchOrphanRules.cancelledGroup(ids, journal: replayed, batch: "orphan").entries.isEmpty, "a second pass writes nothing")
    }

    @Test func anAnthropicBatchsLinesAreCanceled() throws {
        let journal = try Self.journal(kind: .anthropic, lines: 2, committed: [0])
        let (output, entries) = BatchOrphanRules.cancelledGroup([(0, "x"), (1, "y")].map { (entry: $0.0, customID: $0.1) },
                                                                journal: journal, batch: "b")
        #expect(entries.map(\.entry) == [1])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.dropLast())) as? [String: Any])
        #expect(object["custom_id"] as? String == "y")
        #expect((object["result"] as? [String: Any])?["type"] as? String == "canceled")
        #expect(output.last == 0x0A)
    }

    /// The cheap check that a replaced batch's journal is its list's: the list's last bytes.
    @Test func aListEndsForTheInputItWasWrittenFor() {
        let bytes = BatchIDListTests.list(["a", "b", "c"])
        #expect(BatchIDList.ends(bytes[...], for: BatchIDListTests.header()))
        let trailer = BatchIDList.trailer(for: BatchIDListTests.header()).count
        #expect(BatchIDList.ends(bytes.suffix(trailer), for: BatchIDListTests.header()), "the tail alone is enough")
        #expect(!BatchIDList.ends(bytes.suffix(trailer - 1), for: BatchIDListTests.header()), "shorter than the trailer")
        #expect(!BatchIDList.ends(bytes.dropLast(1), for: BatchIDListTests.header()), "cut short")
        #expect(!BatchIDList.ends((bytes + [0x0A])[...], for: BatchIDListTests.header()), "bytes after the trailer")
        #expect(!BatchIDList.ends([][...], for: BatchIDListTests.header()), "empty")
        let other = FileIdentity(device: 3, inode: 45, size: 5000, modifiedNanoseconds: 1_700_000_000_123_456_789, contentHash: 0xfeed)
        #expect(!BatchIDList.ends(bytes[...], for: BatchIDListTests.header(input: other)), "another input under the name")
        #expect(!BatchIDList.ends(bytes[...], for: BatchIDListTests.header(lines: 4)), "other lines")
    }
}
