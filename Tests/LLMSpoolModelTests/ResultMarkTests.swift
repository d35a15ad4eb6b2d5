import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct ResultMarkTests {
    let identity = FileIdentity(device: 2049, inode: 77, size: 120, modifiedNanoseconds: 1_700_000_000_123_456_789,
                                bornNanoseconds: 1_700_000_000_000_000_001, contentHash: 0xCBF2_9CE4_8422_2325)

    @Test(arguments: ["q1", "a b", "line\nbreak", "ünï", "x.md"])
    func aMarkReadsBackAsWritten(id: String) {
        let mark = ResultMark(id: id, request: identity, dialect: "chat")
        #expect(ResultMark.parse(mark.encoded()) == .success(mark))
    }

    @Test func unknownFieldsReadBackAsUnknown() {
        let bare = FileIdentity(device: 1, inode: 2, size: 0, modifiedNanoseconds: -5)
        let mark = ResultMark(id: "q", request: bare)
        #expect(ResultMark.parse(mark.encoded()) == .success(mark))
    }

    @Test(arguments: [
        ("", ResultMarkProblem.missingField(0)),
        ("llmspool-result-mark 1\n1\n2\n3\n4\n-\n-\n-", .missingField(7)),
        ("llmspool-result-mark 2\n1\n2\n3\n4\n-\n-\n-\nq", .unknownVersion("llmspool-result-mark 2")),
        ("llmspool-result-mark 1\n1\n2\n3\n4\n-\n-\n-\n", .badID),
        ("llmspool-result-mark 1\nx\n2\n3\n4\n-\n-\n-\nq", .badNumber(field: "device", "x")),
        ("llmspool-result-mark 1\n1\n-2\n3\n4\n-\n-\n-\nq", .badNumber(field: "inode", "-2")),
        ("llmspool-result-mark 1\n1\n2\n-3\n4\n-\n-\n-\nq", .badNumber(field: "size", "-3")),
        ("llmspool-result-mark 1\n1\n2\n3\n99999999999999999999\n-\n-\n-\nq", .badNumber(field: "modified", "99999999999999999999")),
        ("llmspool-result-mark 1\n1\n2\n3\n4\nborn\n-\n-\nq", .badNumber(field: "born", "born")),
        ("llmspool-result-mark 1\n1\n2\n3\n4\n-\n0x1\n-\nq", .badNumber(field: "fingerprint", "0x1")),
    ])
    func aValueThatIsNoMarkIsNamed(text: String, problem: ResultMarkProblem) {
        #expect(ResultMark.parse(Array(text.utf8)) == .failure(problem))
        #expect(!problem.description.isEmpty)
    }

    @Test func anOverlongOrNonUTF8ValueIsRefused() {
        #expect(ResultMark.parse([UInt8](repeating: 0x0A, count: ResultMark.maximumSize + 1)) == .failure(.tooLong(ResultMark.maximumSize + 1)))
        let bytes = Array("llmspool-result-mark 1\n1\n2\n3\n4\n-\n-\n-\n".utf8) + [0xFF, 0xFE]
        #expect(ResultMark.parse(bytes) == .failure(.badID))
    }

    @Test func everyTruncationOfAMarkParsesOrIsRefusedWithoutCrashing() {
        let bytes = ResultMark(id: "q1", request: identity, dialect: "chat").encoded()
        for length in 0..<bytes.count {
            if case .success(let mark) = ResultMark.parse(Array(bytes.prefix(length))) {
                // Only a shortened id can still parse; it never proves the request q1.
                #expect(!mark.proves(id: "q1", identity: identity), "length \(length)")
            }
        }
    }

    @Test func aMarkProvesOnlyItsOwnRequestInstance() {
        let mark = ResultMark(id: "q1", request: identity)
        #expect(mark.proves(id: "q1", identity: identity))
        #expect(!mark.proves(id: "q2", identity: identity))
        let recycled = FileIdentity(device: identity.device, inode: identity.inode, size: identity.size,
                                    modifiedNanoseconds: identity.modifiedNanoseconds, bornNanoseconds: 5, contentHash: identity.contentHash)
        #expect(!mark.proves(id: "q1", identity: recycled), "a recycled inode is another file")
        let edited = identity.with(contentHash: 1)
        #expect(!mark.proves(id: "q1", identity: edited))
    }
}

@Suite struct MarkedRecoveryTests {
    let identity = FileIdentity(device: 1, inode: 10, size: 5, modifiedNanoseconds: 7, bornNanoseconds: 3)
    let history = TaskHistory(firstSeen: Date(timeIntervalSince1970: 0))

    func record(_ status: TaskRecord.Status, request: FileIdentity? = nil, resultInode: UInt64? = nil) -> TaskRecord {
        TaskRecord(id: "q1", status: status, request: request ?? identity, history: history, resultInode: resultInode)
    }

    @Test func aMarkNamingTheRequestProvesItsEndWhateverTheRecord() {
        let mark = ResultMark(id: "q1", request: identity)
        for record in [nil, record(.active), record(.cancelled), record(.done, resultInode: 99),
                       record(.active, request: FileIdentity(device: 1, inode: 11, size: 5, modifiedNanoseconds: 7))] {
            #expect(Recovery.decide(record: record, identity: identity, resultInode: 50, resultMark: mark) == .alreadyEnded, "\(String(describing: record))")
        }
    }

    @Test func aMarkOfAnotherRequestProvesNothing() {
        let older = ResultMark(id: "q1", request: FileIdentity(device: 1, inode: 10, size: 5, modifiedNanoseconds: 7, bornNanoseconds: 2))
        #expect(Recovery.decide(record: nil, identity: identity, resultInode: 50, resultMark: older) == .fresh)
        #expect(Recovery.decide(record: record(.active), identity: identity, resultInode: 50, resultMark: older) == .resume(history))
        let otherID = ResultMark(id: "q2", request: identity)
        #expect(Recovery.decide(record: record(.active), identity: identity, resultInode: 50, resultMark: otherID) == .resume(history))
        #expect(Recovery.decide(record: nil, identity: nil, resultInode: 50, resultMark: ResultMark(id: "q1", request: identity)) == .fresh)
    }

    @Test func theRecordIsRestoredOnlyWhenItDoesNotProveTheEnd() {
        let mark = ResultMark(id: "q1", request: identity, dialect: "chat")
        let now = Date(timeIntervalSince1970: 100)
        #expect(Recovery.restoredRecord(record: record(.done, resultInode: 50), id: "q1", identity: identity, resultInode: 50,
                                        resultMark: mark, now: now) == nil, "the record proves it already")
        #expect(Recovery.restoredRecord(record: nil, id: "q1", identity: identity, resultInode: 50, resultMark: nil, now: now) == nil)
        #expect(Recovery.restoredRecord(record: nil, id: "q2", identity: identity, resultInode: 50, resultMark: mark, now: now) == nil)

        let lost = Recovery.restoredRecord(record: nil, id: "q1", identity: identity, resultInode: 50, resultMark: mark, now: now)
        #expect(lost?.status == .done && lost?.resultInode == 50 && lost?.request == identity && lost?.dialect == "chat")
        #expect(lost?.history.firstSeen == now)

        var started = history
        started.unfinishedStarts = 1
        started.attempts = [AttemptEntry(startedAt: now, endedAt: now, endpoint: "e", outcome: "ok", bytesSent: 1, bytesReceived: 2)]
        let stale = TaskRecord(id: "q1", status: .active, request: identity, history: started)
        let restored = Recovery.restoredRecord(record: stale, id: "q1", identity: identity, resultInode: 50, resultMark: mark, now: now)
        #expect(restored?.history.attempts.count == 1 && restored?.history.unfinishedStarts == 0, "the attempts kept, the crash count cleared")
        #expect(Recovery.decide(record: restored, identity: identity, resultInode: 50) == .alreadyEnded, "the restored record proves the end alone")

        let foreign = record(.active, request: FileIdentity(device: 1, inode: 11, size: 5, modifiedNanoseconds: 7))
        #expect(Recovery.restoredRecord(record: foreign, id: "q1", identity: identity, resultInode: 50, resultMark: mark, now: now)?.history.firstSeen == now,
                "another request's attempts are not inherited")
    }

    @Test func theOrderIsChosenOncePerSpool() {
        #expect(PublicationPlan.CommitOrder.choose(sharedSpool: false, probe: .supported).order == .resultMarked)
        #expect(PublicationPlan.CommitOrder.choose(sharedSpool: true, probe: .supported).order == .recordFirst)
        let unsupported = PublicationPlan.CommitOrder.choose(sharedSpool: false, probe: .unsupported("setxattr: Operation not supported"))
        #expect(unsupported.order == .recordFirst && unsupported.reason.contains("Operation not supported"))
        #expect(PublicationPlan.CommitOrder.choose(sharedSpool: false, probe: .failed("ENOSPC")).order == .recordFirst)
    }

    @Test func aMarkedPlanHasOneFsyncPerResult() {
        let task = TaskDescriptor(id: "q1", requestPath: "spool/outgoing/q1.json", summary: RequestSummary(model: "m", stream: false, size: 5),
                                  identity: identity, history: history)
        let success = PublicationPlan.Success(task: task, record: record(.done), source: "spool/incoming/q1.partial", streamed: false)
        let layout = SpoolLayout(root: "spool")
        func fileSyncs(_ steps: [PublicationStep]) -> Int {
            steps.filter { step in
                switch step {
                case .syncFile, .writeRecord(_, true, _), .writeFile: true
                default: false
                }
            }.count
        }
        let marked = PublicationPlan.prepare(success, order: .resultMarked) + PublicationPlan.commit(success, layout: layout, order: .resultMarked)
        let first = PublicationPlan.prepare(success) + PublicationPlan.commit(success, layout: layout)
        #expect(fileSyncs(marked) == 1 && fileSyncs(first) == 2)
        #expect(marked.first == .markResult("spool/incoming/q1.partial", ResultMark(id: "q1", request: identity)), "marked before its fsync")
        #expect(!marked.contains(.syncFolder(layout.state)) && first.contains(.syncFolder(layout.state)))
        let anonymous = PublicationPlan.Success(task: TaskDescriptor(id: "q1", requestPath: task.requestPath, summary: task.summary, history: history),
                                                record: record(.done), source: success.source, streamed: false)
        #expect(PublicationPlan.prepare(anonymous, order: .resultMarked) == PublicationPlan.prepare(anonymous), "no identity, no mark: record first")
    }
}
