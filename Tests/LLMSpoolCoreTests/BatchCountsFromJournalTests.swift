import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// `status` without a daemon reporting (none runs, or the one running is stopped) counts the
/// batches in `outgoing` from their journals; before, it listed none.
@Suite final class BatchCountsFromJournalTests {
    // Each test gets its own instance: its own spool, removed when the test is done.
    let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-batch-counts-\(UUID().uuidString)")

    init() throws {
        try layout.create()
    }

    deinit {
        try? FileManager.default.removeItem(atPath: layout.root)
    }

    func dropBatch(_ name: String) throws -> FileIdentity {
        try DurableFile.write(Array("{\"custom_id\":\"a\"}\n{\"custom_id\":\"b\"}\n{\"custom_id\":\"c\"}\n".utf8), to: layout.batchRequest(name))
        return try #require(try SpoolFiles(layout: layout).identity(of: layout.batchRequest(name)))
    }

    func journal(_ name: String, input: FileIdentity, entries: [BatchJournal.Entry]) throws {
        let header = BatchJournal.Header(kind: .openai, lines: 3, createdAt: 1_000, input: input, endpoint: "/v1/chat/completions")
        try DurableFile.write(BatchJournal.encode(header) + entries.flatMap(BatchJournal.encode), to: layout.batchJournal(name))
    }

    @Test func aBatchIsCountedFromItsJournal() throws {
        let input = try dropBatch("b")
        try journal("b", input: input, entries: [BatchJournal.Entry(entry: 2, code: UInt8(ascii: "s"), outputEnd: 10),
                                                 BatchJournal.Entry(entry: 0, code: UInt8(ascii: "f"), outputEnd: 20)])
        let counted = BatchQuery(layout: layout).fromJournals()
        #expect(counted.map(\.name) == ["b"])
        let progress = try #require(counted.first?.progress)
        #expect((progress.total, progress.succeeded, progress.failed, progress.inFlight) == (3, 1, 1, 0))
    }

    @Test func aBatchWithoutAJournalIsNotBegun() throws {
        _ = try dropBatch("new")
        let counted = BatchQuery(layout: layout).fromJournals()
        #expect(counted.map(\.name) == ["new"])
        #expect(counted.first?.progress == nil)
    }

    /// The journal of an earlier file of the name counts nothing of the new one.
    @Test func aJournalOfAnEarlierFileOfTheNameIsNotTheBatchs() throws {
        let earlier = FileIdentity(device: 1, inode: 2, size: 3, modifiedNanoseconds: 4, contentHash: 5)
        _ = try dropBatch("b")
        try journal("b", input: earlier, entries: [BatchJournal.Entry(entry: 0, code: UInt8(ascii: "s"), outputEnd: 10)])
        #expect(BatchQuery(layout: layout).fromJournals().first?.progress == nil)
    }

    /// A new file at the inode of the one the journal was written for (an inode used again
    /// at once after a delete) is not the journal's batch: its size or times differ.
    @Test func aNewFileAtTheJournalsInodeIsNotItsBatch() throws {
        let found = try dropBatch("b")
        let input = FileIdentity(device: found.device, inode: found.inode, size: found.size + 1, modifiedNanoseconds: found.modifiedNanoseconds,
                                 bornNanoseconds: found.bornNanoseconds, contentHash: found.contentHash)
        try journal("b", input: input, entries: [BatchJournal.Entry(entry: 0, code: UInt8(ascii: "s"), outputEnd: 10)])
        #expect(BatchQuery(layout: layout).fromJournals().first?.progress == nil)
    }

    /// A header naming more lines than the input has bytes is no journal of it: nothing is
    /// allocated for its 2^31 lines.
    @Test func aHeaderClaimingMoreLinesThanTheInputHoldsIsNotCounted() throws {
        let input = try dropBatch("b")
        let header = BatchJournal.Header(kind: .openai, lines: 1 << 31, createdAt: 1_000, input: input, endpoint: "/v1/chat/completions")
        try DurableFile.write(BatchJournal.encode(header), to: layout.batchJournal("b"))
        #expect(BatchQuery(layout: layout).fromJournals().first?.progress == nil)
    }

    /// A FIFO where the journal belongs is never opened for a blocking read: before, `status`
    /// waited on it for ever.
    @Test(.timeLimit(.minutes(1))) func aFIFOInTheJournalsPlaceIsNotRead() throws {
        _ = try dropBatch("b")
        #expect(mkfifo(layout.batchJournal("b"), 0o600) == 0)
        let counted = BatchQuery(layout: layout).fromJournals()
        #expect(counted.map(\.name) == ["b"])
        #expect(counted.first?.progress == nil)
    }

    /// A torn last record ends the count there, as the daemon's replay does.
    @Test func aTornLastRecordIsNotCounted() throws {
        let input = try dropBatch("b")
        let header = BatchJournal.Header(kind: .openai, lines: 3, createdAt: 1_000, input: input, endpoint: "/v1/chat/completions")
        try DurableFile.write(BatchJournal.encode(header) + BatchJournal.encode(BatchJournal.Entry(entry: 0, code: UInt8(ascii: "s"), outputEnd: 10))
                              + Array("1 s 2".utf8), to: layout.batchJournal("b"))
        let progress = try #require(BatchQuery(layout: layout).fromJournals().first?.progress)
        #expect((progress.succeeded, progress.failed, progress.rate, progress.eta) == (1, 0, 0, nil))
    }
}
