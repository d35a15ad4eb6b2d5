import FoundationEssentials
import Testing
@testable import LLMSpoolModel

/// The start journal's frames and what a restart after a crash makes of them.
@Suite struct StartJournalTests {
    let file = FileIdentity(device: 1, inode: 42, size: 100, modifiedNanoseconds: 7)
    let history = TaskHistory(firstSeen: Date(timeIntervalSince1970: 0))

    func record(_ status: TaskRecord.Status = .active, request: FileIdentity?, attempts: Int = 0, unfinished: Int = 1) -> TaskRecord {
        var history = history
        history.attempts = (0..<attempts).map { _ in
            AttemptEntry(startedAt: Date(timeIntervalSince1970: 1), endedAt: Date(timeIntervalSince1970: 2), endpoint: "e", outcome: "http-500")
        }
        history.unfinishedStarts = unfinished
        return TaskRecord(id: "a", status: status, request: request, history: history)
    }

    @Test func framesReadBackInOrder() {
        let bytes = StartJournal.frame(name: "a.json", record: Array("{\"x\": 1}\n".utf8))
            + StartJournal.frame(name: "b c.md", record: Array("{}".utf8))
        #expect(StartJournal.frames(bytes) == [
            StartJournal.Frame(name: "a.json", record: Array("{\"x\": 1}\n".utf8)),
            StartJournal.Frame(name: "b c.md", record: Array("{}".utf8)),
        ])
    }

    @Test func aCutOrZeroedTailEndsTheReading() {
        let whole = StartJournal.frame(name: "a.json", record: Array("{\"x\": 1}".utf8))
        let next = StartJournal.frame(name: "b.json", record: Array("{\"y\": 2}".utf8))
        for cut in 1..<next.count {
            #expect(StartJournal.frames(whole + next.prefix(cut)).map(\.name) == ["a.json"], "cut at \(cut)")
        }
        #expect(StartJournal.frames(whole + [UInt8](repeating: 0, count: 4096) + next).map(\.name) == ["a.json"])
        #expect(StartJournal.frames([UInt8](repeating: 0, count: 64)).isEmpty)
        #expect(StartJournal.frames([]).isEmpty)
    }

    @Test func absurdHeadersAreNotFollowed() {
        for header in ["99999999999999999999 5\n", "-3 5\n", "5 -1\n", "0 5\n", "5\n", "5 5 5\n", "\(StartJournal.maxFrameBytes + 1) 1\n",
                       String(repeating: "1", count: 40) + " 1\n", "x y\n"] {
            #expect(StartJournal.frames(Array(header.utf8) + [UInt8](repeating: 0x41, count: 64)).isEmpty, "\(header)")
        }
    }

    @Test func theLastStartOfEachRequestStandsAcrossGenerations() {
        let old = [("a.json", "1"), ("b.json", "1")].flatMap { StartJournal.frame(name: $0.0, record: Array($0.1.utf8)) }
        let current = [("a.json", "2"), ("c.md", "1")].flatMap { StartJournal.frame(name: $0.0, record: Array($0.1.utf8)) } + Array("12 4\nab".utf8)
        let read = StartJournal.lastStarts(in: [old, current])
        #expect(Set(read.starts.map { "\($0.name)=\(String(decoding: $0.record, as: UTF8.self))" }) == ["a.json=2", "b.json=1", "c.md=1"])
        #expect(read.unread == [0, 7], "the cut tail is counted, to be reported")
    }

    @Test func aRecordStandsOnlyForTheRequestItsFrameNames() {
        #expect(StartJournal.recordMatches(name: "a.json", id: "a"))
        #expect(StartJournal.recordMatches(name: "a.md", id: "a"))
        #expect(!StartJournal.recordMatches(name: "a.json", id: "b"))
        #expect(!StartJournal.recordMatches(name: "v.json", id: "../../pwned"))
        #expect(!StartJournal.recordMatches(name: "../x.json", id: "../x"))
        #expect(!StartJournal.recordMatches(name: ".a.json", id: ".a"))
    }

    @Test func aLongLineOfGarbageIsNotSearchedForAHeader() {
        let garbage = [UInt8](repeating: 0x41, count: 1 << 20) + Array("\n".utf8)
        #expect(StartJournal.lastStarts(in: [garbage]).unread == [garbage.count])
    }

    /// A journaled start had no record: any record of the very file was written after it.
    @Test func anyRecordOfTheFileWrittenAfterTheStartEndsIt() {
        for status in [TaskRecord.Status.active, .done, .failed, .cancelled] {
            #expect(StartJournal.fate(started: record(request: file), current: record(status, request: file, attempts: 1, unfinished: 0),
                                      requestIsTheOneStarted: true) == .ended, "\(status)")
        }
        #expect(StartJournal.fate(started: record(request: file), current: record(request: file, unfinished: 2),
                                  requestIsTheOneStarted: true) == .ended, "a crash's record written by an earlier replay")
    }

    @Test func onlyTheFirstStartOfARequestWithoutARecordIsJournaled() {
        var first = history
        first.unfinishedStarts = 1
        #expect(StartJournal.takes(recordless: true, history: first))
        #expect(!StartJournal.takes(recordless: false, history: first), "a record on disk (a cancellation's, an earlier file's) is overwritten")
        var retried = first
        retried.attempts = record(request: file, attempts: 1).history.attempts
        #expect(!StartJournal.takes(recordless: true, history: retried), "a retry's record is on disk")
        var carried = first
        carried.unfinishedStarts = 2
        #expect(!StartJournal.takes(recordless: true, history: carried), "a count carried from a crash")
    }

    @Test func aNewGenerationBeginsPastAFloorAndTwiceWhatIsInFlight() {
        #expect(!StartJournal.isTimeToTurn(framesSinceTurn: 4095, inFlight: 0))
        #expect(StartJournal.isTimeToTurn(framesSinceTurn: 4096, inFlight: 0))
        #expect(!StartJournal.isTimeToTurn(framesSinceTurn: 19_999, inFlight: 10_000))
        #expect(StartJournal.isTimeToTurn(framesSinceTurn: 20_000, inFlight: 10_000))
    }
}
