import Foundation
import Testing
@testable import LLMSpoolCore

/// A request's state as `show` and the live line of `submit --wait` tell it from the
/// spool's files, in the moments its outcome is being published.
@Suite final class RequestStateTests {
    // Each test gets its own instance: its own spool, removed when the test is done.
    let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-state-\(UUID().uuidString)")

    init() throws {
        try layout.create()
    }

    deinit {
        try? FileManager.default.removeItem(atPath: layout.root)
    }

    func drop(_ id: String) throws -> FileIdentity {
        try DurableFile.write(Array(#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#.utf8), to: layout.request(id))
        return try #require(try SpoolFiles(layout: layout).identity(of: layout.request(id)))
    }

    func record(_ id: String, _ status: TaskRecord.Status, request: FileIdentity?, attempts: Int = 1) throws {
        var history = TaskHistory(firstSeen: Date())
        for _ in 0..<attempts {
            history.attempts.append(AttemptEntry(startedAt: Date(), endedAt: Date(), endpoint: "e", outcome: "ok", bytesSent: 1, bytesReceived: 1))
        }
        try TaskRecord(id: id, status: status, request: request, history: history).write(layout, durable: false)
    }

    /// The record says done, the result is not renamed yet and the file not removed: the
    /// request is in flight still (before, it read as queued for a moment, as if a second
    /// attempt were to come).
    @Test(arguments: [TaskRecord.Status.done, .failed]) func aRequestWhoseOutcomeIsBeingPublishedIsInFlight(status: TaskRecord.Status) throws {
        let file = try drop("p")
        try record("p", status, request: file)
        #expect(SpoolQuery(layout: layout).state(of: "p") == .inFlight)
    }

    /// A record of an earlier file of the id says nothing of the new one: it is queued.
    @Test func aNewFileUnderAnIDThatEndedBeforeIsQueued() throws {
        let earlier = FileIdentity(device: 1, inode: 2, size: 3, modifiedNanoseconds: 4, contentHash: 5)
        _ = try drop("n")
        try record("n", .done, request: earlier)
        #expect(SpoolQuery(layout: layout).state(of: "n") == .queued)
    }

    @Test func aRequestWithoutARecordIsQueued() throws {
        _ = try drop("q")
        #expect(SpoolQuery(layout: layout).state(of: "q") == .queued)
    }

    /// A file the daemon leaves in `outgoing` because its name cannot be used is never sent:
    /// `show` says so and why, `queue` and `status` list it (before, `show` said queued and
    /// `queue` left it out), and `wait` ends instead of waiting for ever.
    @Test func aFileWithAReservedNameIsUnusableNotQueued() throws {
        try DurableFile.write(Array("Hello\n".utf8), to: layout.outgoing + "/x.batch.md")
        let query = SpoolQuery(layout: layout)
        #expect(query.requestPath(of: "x.batch") == nil)
        #expect(query.state(of: "x.batch") == .unusable)
        let shown = query.show("x.batch")
        #expect(shown["state"] as? String == "unusable")
        #expect((shown["problem"] as? String)?.contains("ids ending in .batch are reserved") == true)
        #expect((shown["files"] as? [String: String])?["request"] == layout.outgoing + "/x.batch.md")
        let entries = query.queue()
        #expect(entries.map(\.id) == ["x.batch.md"])
        #expect(entries.first?.state == .unusable)
        #expect(entries.first?.reason?.hasPrefix("left in outgoing: ids ending in .batch are reserved") == true)
        let summary = query.summary()
        #expect(summary.queued == 0)
        #expect(summary.unusable.map(\.name) == ["x.batch.md"])
        #expect(summary.text().contains("x.batch.md: ids ending in .batch are reserved"))
        let ending = RequestFollower(layout: layout, id: "x.batch", onText: { _ in }, onProgress: { _ in }).run(timeout: 10, pollInterval: 0.01)
        #expect(ending == .unusable(reason: "ids ending in .batch are reserved: their result would be a batch's summary, incoming/x.batch.json",
                                    path: layout.outgoing + "/x.batch.md"))
    }

    /// `incoming/x.batch.json` is batch x's summary, not the result of a request `x.batch`
    /// (the reason the id is reserved): before, `show x.batch` said done with the summary as
    /// its result, and `wait x.batch` ended at once with success.
    @Test func aBatchsSummaryIsNoResultOfAReservedID() throws {
        try DurableFile.write(Array("Hello\n".utf8), to: layout.outgoing + "/x.batch.md")
        try DurableFile.write(Array("{\"object\":\"batch\"}\n".utf8), to: layout.batchSummary("x"))
        let query = SpoolQuery(layout: layout)
        #expect(query.state(of: "x.batch") == .unusable)
        #expect((query.show("x.batch")["files"] as? [String: String])?["result"] == nil)
        try FileManager.default.removeItem(atPath: layout.outgoing + "/x.batch.md")
        #expect(query.state(of: "x.batch") == .unknown)
    }

    /// `a.error.md` is request a.error's file; `a.error.json` beside it is a name the daemon
    /// leaves alone. Before, `cancel a.error` deleted the `.json` and said it cancelled the
    /// request, which went on.
    @Test func aSiblingWithAReservedNameIsNotTheRequestsFile() throws {
        try DurableFile.write(Array("Hello\n".utf8), to: layout.outgoing + "/a.error.md")
        try DurableFile.write(Array(#"{"model":"m","messages":[]}"#.utf8), to: layout.outgoing + "/a.error.json")
        let query = SpoolQuery(layout: layout)
        #expect(query.requestPath(of: "a.error") == layout.outgoing + "/a.error.md")
        #expect(query.state(of: "a.error") == .queued)
        #expect(query.showUnusable(fileName: "a.error.json")?["state"] as? String == "unusable")
        #expect(query.showUnusable(fileName: "a.error.md") == nil)
        #expect(try SpoolActions(layout: layout).cancel("a.error") == .request(id: "a.error"))
        #expect(!FileManager.default.fileExists(atPath: layout.outgoing + "/a.error.md"))
        #expect(FileManager.default.fileExists(atPath: layout.outgoing + "/a.error.json"))
        // Only the name left alone remains: the id is that file's problem now.
        #expect(query.state(of: "a.error") == .unusable)
    }

    /// Two files of one id are one entry: before, queue listed the id twice.
    @Test func twoFilesOfOneIDAreOneEntry() throws {
        _ = try drop("twin")
        try DurableFile.write(Array("Hello\n".utf8), to: layout.outgoing + "/twin.md")
        let query = SpoolQuery(layout: layout)
        #expect(query.outgoingIDs() == ["twin"])
        #expect(query.queue().map(\.id) == ["twin"])
        #expect(query.summary().queued == 1)
    }
}
