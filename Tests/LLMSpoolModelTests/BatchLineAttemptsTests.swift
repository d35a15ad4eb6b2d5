import FoundationEssentials
import Testing
@testable import LLMSpoolModel

/// A batch line's failed attempts in its journal: replayed, cleared by its entry, and the
/// history a restarted line goes on from.
@Suite struct BatchLineAttemptsTests {
    let input = FileIdentity(device: 1, inode: 7, size: 900, modifiedNanoseconds: 5)

    func header(lines: Int = 4) -> [UInt8] {
        BatchJournal.encode(BatchJournal.Header(kind: .openai, lines: lines, createdAt: 1000, input: input, endpoint: "/v1/chat/completions"))
    }

    @Test func replayKeepsEachLinesLastAttempts() throws {
        let bytes = header() + BatchLineAttempts.encode(entry: 1, .init(count: 1, notBeforeMilliseconds: 5_000))
            + BatchLineAttempts.encode(entry: 2, .init(count: 1, notBeforeMilliseconds: 0))
            + BatchLineAttempts.encode(entry: 1, .init(count: 2, notBeforeMilliseconds: 9_000))
        let replayed = try #require(BatchJournal.replay(bytes))
        #expect(replayed.attempts == [1: .init(count: 2, notBeforeMilliseconds: 9_000), 2: .init(count: 1, notBeforeMilliseconds: 0)])
        #expect(replayed.committed.count == 0, "attempts commit no line")
        #expect(replayed.outputLength == 0)
        #expect(replayed.validLength == bytes.count)
    }

    @Test func aCommittedLinesAttemptsAreMoot() throws {
        let bytes = header() + BatchLineAttempts.encode(entry: 3, .init(count: 4, notBeforeMilliseconds: 1))
            + BatchJournal.encode(BatchJournal.Entry(entry: 3, code: UInt8(ascii: "f"), outputEnd: 70))
            + BatchLineAttempts.encode(entry: 3, .init(count: 5, notBeforeMilliseconds: 1))
        let replayed = try #require(BatchJournal.replay(bytes))
        #expect(replayed.attempts.isEmpty)
        #expect(replayed.committed.contains(3))
        #expect(replayed.outputLength == 70)
    }

    @Test func anOutOfRangeOrNegativeRecordCountsForNothing() throws {
        let bytes = header(lines: 2) + BatchLineAttempts.encode(entry: 9, .init(count: 1, notBeforeMilliseconds: 0))
            + BatchLineAttempts.encode(entry: -1, .init(count: 1, notBeforeMilliseconds: 0))
        let replayed = try #require(BatchJournal.replay(bytes))
        #expect(replayed.attempts.isEmpty)
        let negative = header(lines: 2) + Array("a 1 -3 0\n".utf8) + BatchJournal.encode(BatchJournal.Entry(entry: 0, code: UInt8(ascii: "s"), outputEnd: 9))
        let cut = try #require(BatchJournal.replay(negative))
        #expect(cut.attempts.isEmpty)
        #expect(cut.committed.count == 0, "a record that is not one ends the journal there")
        #expect(cut.validLength == header(lines: 2).count)
    }

    @Test func aTornAttemptRecordIsNotRead() throws {
        let whole = header() + BatchJournal.encode(BatchJournal.Entry(entry: 0, code: UInt8(ascii: "s"), outputEnd: 40))
        let record = BatchLineAttempts.encode(entry: 2, .init(count: 3, notBeforeMilliseconds: 123_456))
        for cut in 1..<record.count {
            let replayed = try #require(BatchJournal.replay(whole + record.prefix(cut)))
            #expect(replayed.attempts.isEmpty, "cut at \(cut)")
            #expect(replayed.validLength == whole.count)
            #expect(replayed.committed.count == 1)
        }
    }

    @Test func aRetriedHistoryIsRememberedWithoutTheFullDisksAttempts() {
        let seen = Date(timeIntervalSince1970: 1_000)
        func entry(_ outcome: String) -> AttemptEntry { AttemptEntry(startedAt: seen, endedAt: seen, endpoint: "e", outcome: outcome) }
        let history = TaskHistory(firstSeen: seen, attempts: [entry("http"), entry("disk"), entry("transport")],
                                  notBefore: Date(timeIntervalSince1970: 1_002.0004))
        #expect(BatchLineAttempts(history: history) == .init(count: 2, notBeforeMilliseconds: 1_002_001))
        #expect(BatchLineAttempts(history: TaskHistory(firstSeen: seen)) == .init(count: 0, notBeforeMilliseconds: 0))
    }

    @Test func aRestartedLineHasOnlyTheAttemptsItHasLeft() {
        var settings = RetrySettings()
        settings.maxAttempts = 5
        settings.maxLifetimeSeconds = 1e9
        let seen = Date(timeIntervalSince1970: 1_000)
        let failure = AttemptFailure(.http, "HTTP 500", httpStatus: 500)
        var history = BatchLineAttempts(count: 3, notBeforeMilliseconds: 1_004_500).history(firstSeen: seen, maxAttempts: 5)
        #expect(history.attempts.count == 3)
        #expect(history.notBefore == Date(timeIntervalSince1970: 1_004.5))
        #expect(history.firstSeen == seen)
        var made = 0
        while true {
            history.attempts.append(AttemptEntry(startedAt: seen, endedAt: seen, endpoint: "e", outcome: "http"))
            made += 1
            let plan = RetryPolicy.plan(failure, headers: [:], history: history, endpointIndex: 0, endpointCount: 1, carriers: 1,
                                        now: seen, settings: settings, random: 0)
            if case .giveUp(let reason) = plan {
                #expect(reason == .attemptsExhausted(attempts: 5))
                break
            }
        }
        #expect(made == 2, "5 attempts in all, 3 of them before the restart")
    }

    @Test func aHugeCountMakesNoLongerHistoryThanMaxAttempts() {
        let seen = Date(timeIntervalSince1970: 0)
        #expect(BatchLineAttempts(count: Int.max, notBeforeMilliseconds: 0).history(firstSeen: seen, maxAttempts: 10).attempts.count == 10)
        #expect(BatchLineAttempts(count: -4, notBeforeMilliseconds: -1).history(firstSeen: seen, maxAttempts: 10).attempts.isEmpty)
        #expect(BatchLineAttempts(count: 1, notBeforeMilliseconds: 0).history(firstSeen: seen, maxAttempts: 10).notBefore == nil)
    }
}
