import Foundation
import Synchronization
import Testing
@testable import LLMSpoolCore

/// The runner of a batch taken over from a dead daemon has the background lane adopt that
/// daemon's groups (which may carry lines of the batch) only once it runs the batch, before
/// its first line is fed. A batch it declines (here: not valid yet) is let go for any daemon
/// to take, and a group adopted for it would be followed by a daemon that never feeds its
/// lines, while the batch's next runner holds those lines aside for it.
@Suite struct BatchRunnerLaneAdoptionTests {
    /// What the runner did, in order, and its log.
    final class Seen: Sendable {
        let events = Mutex<[String]>([])
        let log = Mutex<[String]>([])
        func note(_ event: String) { events.withLock { $0.append(event) } }
        var all: [String] { events.withLock { $0 } }
        func logged(_ text: String) -> Bool { log.withLock { $0.contains { $0.contains(text) } } }
    }

    /// The batch runner, once made, for the registry's question.
    final class RunnerBox: Sendable {
        let runner = Mutex<BatchRunner?>(nil)
        func runs(_ name: String) -> Bool { runner.withLock { $0 }?.runs(batch: name) ?? false }
    }

    struct Taker {
        let runner: BatchRunner
        let leases: LeaseManager
        let seen: Seen
    }

    static let line = #"{"custom_id":"%@","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}]}}"#

    func spool() throws -> SpoolLayout {
        let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-adoption-\(UUID().uuidString)")
        try layout.create()
        return layout
    }

    /// A daemon gone without letting its claim of the batch go: its lease, expired.
    func deadClaim(_ layout: SpoolLayout, batch: String) throws {
        let lease = JSONObject.encode(["owner": "gone:4194400:old", "expires_at": Date().timeIntervalSince1970 - 100, "host": "gone"] as [String: Any])
        try Data(lease).write(to: URL(fileURLWithPath: layout.lease(BatchClaimRules.claimID(batch: batch))))
    }

    /// A group of the dead daemon whose remote batch runs, carrying two lines of the batch
    /// `n`; its claim is free (its follower is gone).
    func deadGroup(_ layout: SpoolLayout) throws {
        let members = (0..<2).map { RemoteIntent.Member(id: SpoolLayout.lineID(batch: "n", entry: $0), request: nil) }
        try RemoteIntentStore(layout: layout).write(RemoteIntent(group: "g1", state: .polling, endpoint: "openai", url: "/v1/chat/completions",
                                                                 createdAt: 7, members: members, inputFileID: "file-1", batchID: "batch_1"))
    }

    /// A runner whose lane adoption goes to a registry of the groups, as the daemon wires them.
    func taker(_ layout: SpoolLayout, host: String = "taker") -> Taker {
        let seen = Seen()
        let logger = Logger(minimum: .debug, sink: { line in seen.log.withLock { $0.append(line) } })
        let leases = LeaseManager(layout: layout, hostID: host, seconds: 30, logger: logger)
        let box = RunnerBox()
        let registry = RemoteGroupRegistry(store: RemoteIntentStore(layout: layout), leases: leases, logger: logger, runsBatch: { box.runs($0) })
        var settings = BatchRunner.Settings(Config())
        // A file not valid yet is looked at again only after this (or when found again).
        settings.settleSeconds = 60
        let runner = BatchRunner(layout: layout, settings: settings, logger: logger, leases: leases,
                                 post: { event in
                                     if case .arrived(.valid(let task)) = event { seen.note("fed \(task.id)") }
                                 },
                                 adoptLaneGroups: { seen.note("adopted \(registry.adoptUnfollowed().map(\.group))") })
        box.runner.withLock { $0 = runner }
        return Taker(runner: runner, leases: leases, seen: seen)
    }

    func waitUntil(_ what: String, timeout: Double = 30, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw CancellationError() }
            usleep(10_000)
        }
    }

    @Test func aBatchTakenOverButDeclinedAdoptsNoGroup() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        try deadGroup(layout)
        try deadClaim(layout, batch: "n")
        // Being written again: not valid yet, so it is let go and looked at later.
        try Data("{\"custom_id\": \n".utf8).write(to: URL(fileURLWithPath: layout.batchRequest("n")))
        let taker = taker(layout)
        taker.runner.start()
        defer { taker.runner.finish() }
        taker.runner.found("n")
        try waitUntil("the batch is looked at and let go") {
            taker.seen.logged("not valid yet") && !taker.leases.holds(BatchClaimRules.claimID(batch: "n"))
        }
        #expect(!taker.runner.runs(batch: "n"))
        #expect(taker.seen.all.isEmpty, "nothing adopted nor fed: \(taker.seen.all)")
        #expect(!taker.leases.holds(RemoteGroupClaims.claimID(group: "g1")), "the group is left for the daemon that will run the batch")
    }

    @Test func aBatchTakenOverAndRunAdoptsTheGroupsBeforeItsFirstLine() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        try deadGroup(layout)
        try deadClaim(layout, batch: "n")
        let lines = ["a", "b", "c"].map { String(format: Self.line, $0) }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: layout.batchRequest("n")))
        let taker = taker(layout)
        taker.runner.start()
        defer { taker.runner.finish() }
        taker.runner.found("n")
        try waitUntil("every line is fed") { taker.seen.all.filter { $0.hasPrefix("fed ") }.count == lines.count }
        #expect(taker.seen.all.first == "adopted [\"g1\"]", "adopted before the first line: \(taker.seen.all)")
        #expect(taker.runner.runs(batch: "n"))
        #expect(taker.leases.holds(RemoteGroupClaims.claimID(group: "g1")))
    }

    /// A batch whose runner stopped cleanly (its claim let go at once, so the next claim is
    /// not a takeover) while a group of its lines, recorded just before, was followed there:
    /// the daemon that resumes the batch from its journal adopts that group before it feeds a
    /// line, instead of counting on an earlier look at `state/remote` to know the group.
    @Test func aBatchResumedAfterItsRunnerStoppedAdoptsTheGroupsBeforeItsFirstLine() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let lines = ["a", "b", "c"].map { String(format: Self.line, $0) }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: layout.batchRequest("n")))
        let first = taker(layout, host: "first")
        first.runner.start()
        first.runner.found("n")
        try waitUntil("the first runner feeds every line") { first.seen.all.filter { $0.hasPrefix("fed ") }.count == lines.count }
        first.runner.finish()
        #expect(!first.leases.holds(BatchClaimRules.claimID(batch: "n")))
        try deadGroup(layout)

        let next = taker(layout, host: "next")
        next.runner.start()
        defer { next.runner.finish() }
        next.runner.found("n")
        try waitUntil("every line is fed again") { next.seen.all.filter { $0.hasPrefix("fed ") }.count == lines.count }
        #expect(next.seen.logged("batch resumed"))
        #expect(next.seen.all.first == "adopted [\"g1\"]", "adopted before the first line: \(next.seen.all)")
        #expect(next.leases.holds(RemoteGroupClaims.claimID(group: "g1")))
    }
}
