import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// With locks, a claim taken again by the daemon that holds it (a request the background
/// lane hands back to the live lane is claimed again at its start) keeps its lock: before,
/// the second claim held the id without a lock and closed the one it had, so that another
/// daemon's look found the lock free and took the request over while it was being sent.
@Suite struct LockedClaimAgainTests {
    @Test func aClaimTakenAgainKeepsItsLock() throws {
        let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-locked-again-\(UUID().uuidString)")
        try layout.create()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let logger = Logger(minimum: .error)
        let a = LeaseManager(layout: layout, hostID: "host-a", seconds: 1, logger: logger)
        let b = LeaseManager(layout: layout, hostID: "host-b", seconds: 1, logger: logger)
        try #require(a.chooseMethod().method == .locks && b.chooseMethod().method == .locks, "a local folder serves locks")
        #expect(a.claim("r") == .claimed)
        #expect(a.claim("r") == .claimed, "taken again: its own")
        // Past the lease time and its margin: only the lock keeps the claim now.
        let deadline = Date().addingTimeInterval(10)
        while (a.read(layout.lease("r"))?.expiresAt ?? 0) + a.margin + 0.5 > LeaseManager.now() && Date() < deadline { usleep(100_000) }
        #expect(b.claim("r") == .heldElsewhere, "the lock is still held")
        #expect(a.stillMine("r"))
    }
}
