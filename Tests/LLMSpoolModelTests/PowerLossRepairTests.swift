import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct PowerLossRepairTests {
    let request = FileIdentity(device: 2049, inode: 77, size: 120, modifiedNanoseconds: 1_700_000_000_000_000_000,
                               bornNanoseconds: 1_700_000_000_000_000_000, contentHash: 42)
    let later = FileIdentity(device: 2049, inode: 78, size: 90, modifiedNanoseconds: 1_700_000_100_000_000_000,
                             bornNanoseconds: 1_700_000_100_000_000_000, contentHash: 43)
    let resultModified: Int64 = 1_700_000_050_000_000_000
    let now = Date(timeIntervalSince1970: 1_700_000_200)

    func record(_ status: TaskRecord.Status, of identity: FileIdentity?, resultInode: UInt64? = nil) -> TaskRecord {
        var history = TaskHistory(firstSeen: Date(timeIntervalSince1970: 1_700_000_000))
        history.unfinishedStarts = status == .active ? 1 : 0
        return TaskRecord(id: "q1", status: status, request: identity, history: history, resultInode: resultInode)
    }

    @Test func aRunMarkReadsBackAsWritten() {
        let mark = PowerLossRepair.RunMark(bootID: "6a1f0c3e-55d2-4c83-9d0e-1b2a3c4d5e6f", startedNanoseconds: 1_700_000_000_123_456_789)
        #expect(PowerLossRepair.RunMark.parse(mark.encoded()) == mark)
    }

    @Test(arguments: ["", "llmspool-run 2\nab\n1\n", "llmspool-run 1\n\n1\n", "llmspool-run 1\nab\n-1\n",
                      "llmspool-run 1\nab\n99999999999999999999\n", "llmspool-run 1\nnot hex!\n1\n", "llmspool-run 1\nab\n"])
    func aValueThatIsNoRunMarkIsNone(text: String) {
        #expect(PowerLossRepair.RunMark.parse(Array(text.utf8)) == nil)
    }

    @Test func anOverlongRunMarkIsNone() {
        #expect(PowerLossRepair.RunMark.parse(Array("llmspool-run 1\nab\n1\n".utf8) + [UInt8](repeating: 0x20, count: 300)) == nil)
    }

    @Test func onlyAnotherBootOrAnUnreadableMarkAsksForAScan() {
        let mark = PowerLossRepair.RunMark(bootID: "ab", startedNanoseconds: 10_000_000_000)
        #expect(PowerLossRepair.scan(previous: .absent, bootID: "ab") == .none, "no run of this order: no marked result")
        #expect(PowerLossRepair.scan(previous: .found(mark), bootID: "ab") == .none, "the same boot: a kill keeps the records")
        #expect(PowerLossRepair.scan(previous: .found(mark), bootID: "cd") == .since(8_000_000_000), "a reboot: the last run's results")
        #expect(PowerLossRepair.scan(previous: .found(mark), bootID: nil) == .since(8_000_000_000), "no boot id: as if rebooted")
        #expect(PowerLossRepair.scan(previous: .unreadable, bootID: "ab") == .everything)
        let early = PowerLossRepair.RunMark(bootID: "ab", startedNanoseconds: 5)
        #expect(PowerLossRepair.scan(previous: .found(early), bootID: "cd") == .since(0), "never before 1970")
    }

    @Test func aScanCoversTheResultsOfItsTimeOnly() {
        #expect(!PowerLossRepair.covers(.none, modifiedNanoseconds: .max))
        #expect(PowerLossRepair.covers(.everything, modifiedNanoseconds: .min))
        #expect(PowerLossRepair.covers(.since(100), modifiedNanoseconds: 100))
        #expect(!PowerLossRepair.covers(.since(100), modifiedNanoseconds: 99))
    }

    func repaired(_ record: TaskRecord?, recordModified: Int64? = nil, mark: ResultMark?) -> TaskRecord? {
        PowerLossRepair.repairedRecord(id: "q1", record: record, recordModifiedNanoseconds: recordModified, resultInode: 900,
                                       resultModifiedNanoseconds: resultModified, mark: mark, now: now)
    }

    @Test func aLostRecordIsWrittenAgainAsDone() throws {
        let restored = try #require(repaired(nil, mark: ResultMark(id: "q1", request: request, dialect: "chat")))
        #expect(restored.status == .done)
        #expect(restored.resultInode == 900)
        #expect(restored.request == request)
        #expect(restored.dialect == "chat")
    }

    @Test func aStaleActiveRecordOfTheSameRequestBecomesDoneAndKeepsItsHistory() throws {
        let stale = record(.active, of: request)
        let restored = try #require(repaired(stale, recordModified: resultModified - 1, mark: ResultMark(id: "q1", request: request)))
        #expect(restored.status == .done)
        #expect(restored.history.firstSeen == stale.history.firstSeen)
        #expect(restored.history.unfinishedStarts == 0, "the start ended")
    }

    @Test func aRecordThatAlreadyProvesTheResultIsLeftAlone() {
        #expect(repaired(record(.done, of: request, resultInode: 900), recordModified: resultModified,
                         mark: ResultMark(id: "q1", request: request)) == nil)
    }

    @Test func aLaterRequestsRecordIsLeftAlone() {
        let mark = ResultMark(id: "q1", request: request)
        #expect(repaired(record(.active, of: later), recordModified: resultModified + 1, mark: mark) == nil)
        #expect(repaired(record(.failed, of: later), recordModified: resultModified, mark: mark) == nil)
        // An older request's record the power loss left behind, from before this result:
        #expect(repaired(record(.done, of: later, resultInode: 5), recordModified: resultModified - 1, mark: mark)?.request == request)
    }

    @Test func noMarkOrAnotherIdsMarkRepairsNothing() {
        #expect(repaired(nil, mark: nil) == nil)
        #expect(repaired(nil, mark: ResultMark(id: "q2", request: request)) == nil)
    }
}
