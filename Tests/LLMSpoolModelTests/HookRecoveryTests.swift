import Foundation
import Testing
@testable import LLMSpoolModel

/// A hook noted as owed runs at the next start only for the outcome its note names: the
/// result or the failure of that very request; a request still queued reports (or notes)
/// its own; an older or newer outcome of the same id is not the note's.
@Suite struct HookRecoveryTests {
    let request = FileIdentity(device: 1, inode: 10, size: 5, modifiedNanoseconds: 100, bornNanoseconds: 50)
    let newer = FileIdentity(device: 1, inode: 11, size: 5, modifiedNanoseconds: 200, bornNanoseconds: 150)
    var note: ResultMark { ResultMark(id: "x", request: request) }

    func record(_ status: TaskRecord.Status, of identity: FileIdentity, resultInode: UInt64? = nil) -> TaskRecord {
        var record = TaskRecord(id: "x", status: status, request: identity, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
        record.resultInode = resultInode
        return record
    }

    @Test func theNotesOwnRequestStillQueuedKeepsTheNote() {
        let found = HookRecovery.Found(queued: request, resultInode: 7, resultMark: note, errorRecordExists: true)
        #expect(HookRecovery.decide(id: "x", note: note, found: found) == .leaveToTheRequest)
    }

    @Test func aResultProvenByItsMarkOrItsRecordRunsOnComplete() {
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(resultInode: 7, resultMark: note)) == .runOnComplete)
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: record(.done, of: request, resultInode: 7), resultInode: 7)) == .runOnComplete)
        // A newer request of the same id queued does not hide the older outcome's hook.
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(queued: newer, resultInode: 7, resultMark: note)) == .runOnComplete)
    }

    /// An older result of the same id (the note's attempt died before its commit point)
    /// proves nothing: no hook runs for it again.
    @Test func anOlderResultOfTheSameIdIsNotTheNotes() {
        let older = ResultMark(id: "x", request: FileIdentity(device: 1, inode: 3, size: 5, modifiedNanoseconds: 1))
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(resultInode: 7, resultMark: older)) == .drop)
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: record(.done, of: request, resultInode: 8), resultInode: 7)) == .drop,
                "the record names another result")
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: record(.done, of: newer, resultInode: 7), resultInode: 7)) == .drop,
                "the record is another request's")
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: record(.active, of: request, resultInode: 7), resultInode: 7)) == .drop)
    }

    @Test func aFailureProvenByTheRequestMovedBesideItsErrorRecordRunsOnFailure() {
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(failedRequest: request, errorRecordExists: true)) == .runOnFailure)
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(failedRequest: newer, errorRecordExists: true)) == .drop)
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(failedRequest: request, errorRecordExists: false)) == .drop)
    }

    /// A failure committed (its task record) whose error record was never written, its
    /// request deleted since (`failed/` could not be written): the record is written from
    /// the task record and the hook runs. Before, the note was dropped and no hook ran.
    @Test func aCommittedFailureWithoutItsErrorRecordIsWrittenThenRunsOnFailure() {
        var failed = record(.failed, of: request)
        failed.errorRecord = Array("{}".utf8)
        // Without the mark the record was published, and its consumer took it with the request.
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: failed)) == .drop, "never published twice")
        failed.errorRecordOwed = true
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: failed)) == .writeErrorRecordThenRunOnFailure)
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: failed, errorRecordExists: true)) == .runOnFailure)
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(queued: request, record: failed)) == .leaveToTheRequest,
                "still queued: its clean-up writes the record and reports")
        var other = record(.failed, of: newer)
        other.errorRecord = Array("{}".utf8)
        other.errorRecordOwed = true
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: other)) == .drop, "another request's failure")
        var empty = record(.failed, of: request)
        empty.errorRecordOwed = true
        #expect(HookRecovery.decide(id: "x", note: note, found: .init(record: empty)) == .drop, "no record to write")
    }

    @Test func nothingPublishedNothingOwed() {
        #expect(HookRecovery.decide(id: "x", note: note, found: .init()) == .drop)
    }

    /// A request whose identity was not known: its note is judged by the files alone.
    @Test func aNoteWithoutAnIdentityGoesByPresence() {
        #expect(HookRecovery.decide(id: "x", note: nil, found: .init(queued: newer)) == .leaveToTheRequest)
        #expect(HookRecovery.decide(id: "x", note: nil, found: .init(resultInode: 7)) == .runOnComplete)
        #expect(HookRecovery.decide(id: "x", note: nil, found: .init(errorRecordExists: true)) == .runOnFailure)
        #expect(HookRecovery.decide(id: "x", note: nil, found: .init()) == .drop)
    }
}

/// A batch's note: the input or the journal still there leaves it to the batch's end; a
/// summary runs the hook with its counts, read back from the summary as written.
@Suite struct BatchHookRecoveryTests {
    @Test func theDecisionFollowsWhatTheSpoolHolds() {
        #expect(HookRecovery.decideBatch(inputPresent: true, journalPresent: false, summaryExists: true, refused: false) == .leaveToTheBatch)
        #expect(HookRecovery.decideBatch(inputPresent: false, journalPresent: true, summaryExists: true, refused: false) == .leaveToTheBatch,
                "an end not finished: the batch's recovery finishes it and runs the hook")
        #expect(HookRecovery.decideBatch(inputPresent: false, journalPresent: false, summaryExists: true, refused: false) == .runFromSummary)
        #expect(HookRecovery.decideBatch(inputPresent: false, journalPresent: false, summaryExists: false, refused: true) == .runRefused)
        #expect(HookRecovery.decideBatch(inputPresent: false, journalPresent: false, summaryExists: false, refused: false) == .drop)
    }

    @Test func aSummaryIsReadBackWithItsCounts() {
        var counts = BatchCounts()
        counts.succeeded = 7
        counts.failed = 2
        counts.expired = 1
        let summary = BatchSummary(name: "b", status: .completed, endpoint: "/v1/chat/completions", total: 10,
                                   counts: counts, createdAt: 1, endedAt: 2, inputFile: "in", outputFile: "out")
        #expect(BatchSummary.end(of: summary.encoded()) == BatchSummary.End(status: "completed", total: 10, completed: 7, failed: 3))
        #expect(BatchSummary.end(of: Array("{}".utf8)) == nil)
        #expect(BatchSummary.end(of: Array(#"{"status": "completed", "request_counts": {"total": "10", "completed": 1, "failed": 0}}"#.utf8)) == nil)
        #expect(BatchSummary.end(of: Array("not json".utf8)) == nil)
    }
}
