import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Claims held by locks (a local disk, GlusterFS): a daemon paused past its lease time keeps
/// its claim, since no other daemon can take a lock its live owner holds.
@Suite(.serialized) struct LockedClaimPauseTests {
    /// Paused for twice its lease while its answer arrives, the daemon publishes that answer
    /// when it wakes. Before, it took its lease's time for the claim, discarded the answer
    /// ("another daemon holds the request now", with no other daemon), ended its own lease
    /// and sent the request again.
    @Test func aDaemonPausedPastItsLeaseWithLocksKeepsItsAnswer() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let daemon = try harness.startExtraDaemon("d1", config: ["watch_mode": "inotify", "leases": true, "lease_seconds": 3, "host_id": "d1"])
        defer {
            kill(daemon.processIdentifier, SIGCONT)
            kill(daemon.processIdentifier, SIGTERM)
        }
        #expect(!harness.extraLog("d1").contains("claims are lease files only"), "locks on a local disk")
        try harness.drop("paused", Harness.request("paused past its lease", stub: ["latency_ms": 1000]))
        try waitUntil("the request is sent", timeout: 20) { harness.extraLog("d1").contains("upload started id=paused") }
        kill(daemon.processIdentifier, SIGSTOP)
        // Twice the lease time and its margin: without locks, a takeover could have begun.
        let resumeAt = Date().addingTimeInterval(6)
        try waitUntil("six seconds pass", timeout: 10) { Date() >= resumeAt }
        kill(daemon.processIdentifier, SIGCONT)
        try waitUntil("the answer is published", timeout: 20) {
            Syscall.isPresent(harness.layout.result("paused")) && !Syscall.isPresent(harness.layout.request("paused"))
        }
        #expect(!harness.extraLog("d1").contains("attempt discarded"), "\(harness.extraLog("d1").split(separator: "\n").filter { $0.contains("paused") }.joined(separator: "\n"))")
        #expect(try harness.arrivals(of: "paused past its lease").count == 1, "sent once")
    }
}
