import Foundation
import Synchronization
import Testing
@testable import LLMSpoolCore

/// A request's file leaving `outgoing` before its task ran is a withdrawal, unless its task
/// had ended already: on a shared spool, a daemon killed between its result and its claim's
/// tombstone leaves the others to see the request go as if withdrawn.
@Suite final class FinisherWithdrawalTests {
    // Each test gets its own instance: its own spool, removed when the test is done.
    let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-withdrawal-\(UUID().uuidString)")

    init() throws {
        try layout.create()
    }

    deinit {
        try? FileManager.default.removeItem(atPath: layout.root)
    }

    /// What the finisher reported, in order.
    final class Reports: Sendable {
        let list = Mutex<[TaskReport]>([])
        var all: [TaskReport] { list.withLock { $0 } }
    }

    func finisher(_ reports: Reports) -> Finisher {
        Finisher(layout: layout, logger: Logger(minimum: .error), retry: RetrySettings(), endpointAPIs: [.openai]) { report in
            reports.list.withLock { $0.append(report) }
        }
    }

    func record(_ id: String, _ status: TaskRecord.Status, request: FileIdentity? = nil, resultInode: UInt64? = nil) throws {
        try TaskRecord(id: id, status: status, request: request, history: TaskHistory(firstSeen: Date()), resultInode: resultInode)
            .write(layout, durable: false)
    }

    /// Publishes a result for `id` and returns its inode.
    func result(_ id: String) throws -> UInt64 {
        try DurableFile.write(Array(#"{"object":"chat.completion"}"#.utf8), to: layout.result(id))
        return UInt64(try Syscall.lstat(layout.result(id)).st_ino)
    }

    static let ended = FileIdentity(device: 7, inode: 70, size: 120, modifiedNanoseconds: 1_000_000_000, contentHash: 0xfeed)

    @Test(arguments: [TaskRecord.Status.done, .failed])
    func aRequestWhoseTaskEndedIsNotReportedCancelled(_ status: TaskRecord.Status) throws {
        try record("w1", status)
        let reports = Reports()
        finisher(reports).withdrawn(id: "w1")
        #expect(reports.all.isEmpty, "an ended task's removal reports nothing")
        #expect(TaskRecord.load(layout, id: "w1")?.status == status, "its record keeps its end")
    }

    /// The same request's file, seen through this mount (its own device and inode numbers)
    /// as it was when another mount's daemon ended it.
    @Test func theEndedFileSeenThroughAnotherMountIsNotReportedCancelled() throws {
        try record("w4", .done, request: Self.ended, resultInode: 1234)
        _ = try result("w4")
        let reports = Reports()
        let throughThisMount = FileIdentity(device: 9, inode: 4711, size: 120, modifiedNanoseconds: 1_000_000_000, contentHash: 0xfeed)
        finisher(reports).withdrawn(id: "w4", identity: throughThisMount)
        #expect(reports.all.isEmpty)
    }

    /// The request's own file, its done record naming the result published.
    @Test func theEndedFileWithItsResultIsNotReportedCancelled() throws {
        try record("w6", .done, request: Self.ended, resultInode: try result("w6"))
        let reports = Reports()
        finisher(reports).withdrawn(id: "w6", identity: Self.ended)
        #expect(reports.all.isEmpty)
    }

    /// A done record written before its result got its name, the daemon killed in between
    /// (the two-fsync order): the request runs again, and deleted before it does, it is
    /// withdrawn, as a restart would decide.
    @Test func aDoneRecordWhoseResultNeverGotItsNameProvesNoEnd() throws {
        try record("w7", .done, request: Self.ended, resultInode: 99_999)
        let reports = Reports()
        finisher(reports).withdrawn(id: "w7", identity: Self.ended)
        #expect(reports.all == [TaskReport(id: "w7", outcome: .cancelled, request: Self.ended)], "the report names the file withdrawn")
    }

    /// A newer file dropped under a finished request's name, deleted before it started:
    /// that one is withdrawn, and the old end's record stays.
    @Test(arguments: [TaskRecord.Status.done, .failed])
    func aNewerFileUnderAnEndedTasksNameIsCancelled(_ status: TaskRecord.Status) throws {
        try record("w5", status, request: Self.ended)
        let reports = Reports()
        let newer = FileIdentity(device: 7, inode: 71, size: 133, modifiedNanoseconds: 5_000_000_000, contentHash: 0xbeef)
        finisher(reports).withdrawn(id: "w5", identity: newer)
        #expect(reports.all == [TaskReport(id: "w5", outcome: .cancelled, request: newer)], "the newer file, not the ended one")
        #expect(TaskRecord.load(layout, id: "w5")?.status == status)
    }

    @Test(arguments: [TaskRecord.Status.active, .cancelled])
    func aRequestRemovedBeforeItsTaskEndedIsCancelledOnce(_ status: TaskRecord.Status) throws {
        try record("w2", status)
        let reports = Reports()
        finisher(reports).withdrawn(id: "w2")
        #expect(reports.all == [TaskReport(id: "w2", outcome: .cancelled)])
        #expect(TaskRecord.load(layout, id: "w2")?.status == .cancelled)
    }

    @Test func aRequestWithoutARecordIsCancelled() throws {
        let reports = Reports()
        finisher(reports).withdrawn(id: "w3")
        #expect(reports.all == [TaskReport(id: "w3", outcome: .cancelled)])
    }
}
