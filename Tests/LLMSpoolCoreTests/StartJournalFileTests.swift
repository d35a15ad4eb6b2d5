import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore
import LLMSpoolModel
import LLMSpoolSystem

/// The start journal on disk: appended, turned into a new generation, replayed after a crash.
@Suite struct StartJournalFileTests {
    let root: String
    let layout: SpoolLayout
    let logger = Logger(minimum: .error)

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("startjournal-\(UUID().uuidString)").path
        layout = SpoolLayout(root: root)
        try layout.create()
    }

    /// A request in `outgoing` and the record its start stands for.
    func request(_ id: String, unfinished: Int = 1) throws -> TaskRecord {
        let path = layout.request(id)
        try DurableFile.write(Array("{\"messages\": []}".utf8), to: path)
        let identity = try #require(try SpoolFiles(layout: layout).identity(of: path))
        return TaskRecord(id: id, status: .active, request: identity,
                          history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0), unfinishedStarts: unfinished))
    }

    @Test func aCrashTurnsTheUnendedStartsIntoRecords() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let journal = StartJournalFile(layout: layout, logger: logger)
        let inFlight = try request("in-flight", unfinished: 2)
        let ended = try request("ended")
        let gone = try request("gone")
        try journal.append(inFlight, requestPath: layout.request("in-flight"), now: 0, notEnded: { [] })
        try journal.append(ended, requestPath: layout.request("ended"), now: 0, notEnded: { [] })
        try journal.append(gone, requestPath: layout.request("gone"), now: 0, notEnded: { [] })
        var done = ended
        done.status = .done
        done.history.unfinishedStarts = 0
        try done.write(layout, durable: false)
        try FileManager.default.removeItem(atPath: layout.request("gone"))

        #expect(StartJournalFile.replay(layout: layout, previousRunCrashed: true, logger: logger) == 1)
        #expect(TaskRecord.load(layout, id: "in-flight") == inFlight, "the record the start stood for, with its count")
        #expect(TaskRecord.load(layout, id: "ended")?.status == .done)
        #expect(TaskRecord.load(layout, id: "gone") == nil)
        #expect(!FileManager.default.fileExists(atPath: layout.startJournal), "the journal is consumed")
    }

    /// After a stop or a kill -9 the unended starts are recorded too: the record keeps the
    /// request's first_seen (its `max_lifetime_seconds` runs from it); the engine, told the
    /// last run did not crash, clears the count as it reads it.
    @Test func withoutACrashTheUnendedStartsAreRecordedForTheirFirstSeen() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let journal = StartJournalFile(layout: layout, logger: logger)
        let started = try request("a")
        try journal.append(started, requestPath: layout.request("a"), now: 0, notEnded: { [] })
        try journal.append(try request("gone"), requestPath: layout.request("gone"), now: 0, notEnded: { [] })
        try FileManager.default.removeItem(atPath: layout.request("gone"))
        #expect(StartJournalFile.replay(layout: layout, previousRunCrashed: false, logger: logger) == 1)
        #expect(TaskRecord.load(layout, id: "a")?.history.firstSeen == Date(timeIntervalSince1970: 0))
        #expect(TaskRecord.load(layout, id: "gone") == nil)
        #expect(!FileManager.default.fileExists(atPath: layout.startJournal))
    }

    /// Past a generation's length the attempts still in flight are copied into the new one:
    /// a start made long before the crash, thousands of starts ago, still counts.
    @Test func aLongAttemptOutlivesTwoGenerations() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let journal = StartJournalFile(layout: layout, logger: logger)
        let long = try request("long")
        let short = try request("short")
        try journal.append(long, requestPath: layout.request("long"), now: 0, notEnded: { [] })
        for _ in 0..<3 {
            for _ in 0..<4096 {
                try journal.append(short, requestPath: layout.request("short"), now: 0, notEnded: { [] })
                journal.turnIfDue(inFlightCount: 1, notEnded: { [(long, layout.request("long"))] })
            }
        }
        let current = StartJournal.frames(try FileReader.prefix(path: layout.startJournal, limit: 64 << 20))
        let previous = StartJournal.frames(try FileReader.prefix(path: layout.previousStartJournal, limit: 64 << 20))
        #expect(current.count < 4096 && previous.count <= 4097, "each generation stays about one turn long")
        #expect(current.first?.name == "long.json", "a new generation opens with the starts in flight")
        var done = short
        done.status = .done
        try done.write(layout, durable: false)
        #expect(StartJournalFile.replay(layout: layout, previousRunCrashed: true, logger: logger) == 1)
        #expect(TaskRecord.load(layout, id: "long")?.history.unfinishedStarts == 1)
    }

    /// `state/` removed while the daemon runs: appends would go to a file no restart reads.
    /// The next append after the check's interval begins a new journal with the starts not
    /// ended, so a crash after it still counts them.
    @Test func aJournalRemovedWhileRunningIsBegunAgainWithTheStartsNotEnded() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let journal = StartJournalFile(layout: layout, logger: logger)
        let long = try request("long")
        try journal.append(long, requestPath: layout.request("long"), now: 0, notEnded: { [] })
        try FileManager.default.removeItem(atPath: layout.state)
        try layout.create()
        let next = try request("next")
        try journal.append(next, requestPath: layout.request("next"), now: StartJournalFile.linkCheckSeconds,
                           notEnded: { [(long, layout.request("long"))] })
        let names = StartJournal.frames(try FileReader.prefix(path: layout.startJournal, limit: 1 << 20)).map(\.name)
        #expect(names == ["long.json", "next.json"])
        #expect(StartJournalFile.replay(layout: layout, previousRunCrashed: true, logger: logger) == 2)
    }

    /// A frame whose record names another id (or a path) writes nothing: a record from the
    /// journal lands only under the id of the request file the frame names.
    @Test func aStartThatDoesNotNameItsRequestIsIgnored() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let victim = try request("v")
        var elsewhere = victim
        elsewhere.id = "../../escaped"
        var other = victim
        other.id = "w"
        let bytes = StartJournal.frame(name: "v.json", record: elsewhere.encoded()) + StartJournal.frame(name: "v.json", record: other.encoded())
        try DurableFile.write(bytes, to: layout.startJournal)
        #expect(StartJournalFile.replay(layout: layout, previousRunCrashed: true, logger: logger) == 0)
        #expect(TaskRecord.load(layout, id: "w") == nil && TaskRecord.load(layout, id: "v") == nil)
        #expect(!FileManager.default.fileExists(atPath: root + "/escaped.json"))
    }

    /// A journal planted as a huge sparse file is read only up to the limit: the start it
    /// delays is the daemon's.
    @Test func aHugeJournalIsReadOnlyUpToTheLimit() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fd = open(layout.startJournal, O_WRONLY | O_CREAT, 0o600)
        #expect(fd >= 0)
        #expect(ftruncate(fd, 1 << 40) == 0, "a sparse file of a TiB")
        close(fd)
        let read = try FileReader.prefix(path: layout.startJournal, limit: 1 << 20)
        #expect(read.count == 1 << 20)
        #expect(StartJournalFile.replay(layout: layout, previousRunCrashed: true, logger: logger) == 0)
        #expect(!FileManager.default.fileExists(atPath: layout.startJournal))
    }
}
