import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Two daemons on one spool whose mounts differ: one can hold its claims under file locks,
/// the other (a mount whose locks stay local, as sshfs's or NFS's with `nolock`) only by
/// lease files. Each must respect the other's claims: a lease-files claim holds no lock,
/// which a daemon using locks took for a dead owner's, and sent the request again.
@Suite(.serialized) struct MixedClaimMethodTests {
    static func config(_ host: String, _ harness: Harness) -> [String: Any] {
        ["watch_mode": "poll", "poll_interval_seconds": 0.2, "leases": true, "lease_seconds": 3, "host_id": host, "concurrency": 8]
    }

    @Test func aDaemonWithLocksLeavesALeaseFilesDaemonsClaimsAloneAndClaimsAsItDoes() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let leaseFiles = try harness.startExtraDaemon("files", config: Self.config("files", harness),
                                                      environment: [SpoolDaemon.leaseFilesVariable: "lease-files"])
        defer { kill(leaseFiles.processIdentifier, SIGTERM) }
        try waitUntil("the lease-files daemon runs", timeout: 20) { harness.extraLog("files").contains("claims are lease files only") }
        let ids = (1...6).map { "mixed\($0)" }
        for id in ids { try harness.drop(id, Harness.request("Mixed claims \(id)", stub: ["latency_ms": 5000])) }
        try waitUntil("the lease-files daemon has claimed every request", timeout: 20) {
            ids.allSatisfy { harness.extraLog("files").contains("upload started id=\($0)") }
        }
        let locks = try harness.startExtraDaemon("locks", config: Self.config("locks", harness))
        defer { kill(locks.processIdentifier, SIGTERM) }
        try waitUntil("the daemon with locks runs", timeout: 20) { harness.extraLog("locks").contains("claims are held under file locks") }
        let more = (1...6).map { "later\($0)" }
        for id in more { try harness.drop(id, Harness.request("Mixed claims \(id)", stub: ["latency_ms": 1500])) }
        try waitUntil("every request is answered and has left outgoing", timeout: 60) {
            (ids + more).allSatisfy { Syscall.isPresent(harness.layout.result($0)) && !Syscall.isPresent(harness.layout.request($0)) }
        }
        for id in ids + more {
            #expect(try harness.arrivals(of: "Mixed claims \(id)").count == 1, "\(id) was sent once")
        }
        for id in ids {
            #expect(!harness.extraLog("locks").contains("upload started id=\(id)"), "\(id), claimed by the lease-files daemon, was not taken")
        }
        #expect(harness.extraLog("locks").contains("claims with lease files only shares this spool"), "the daemon with locks said it saw the other")
    }
}
