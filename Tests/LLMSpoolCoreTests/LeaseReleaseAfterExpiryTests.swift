import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// A claim given up once its lease file had expired (a daemon paused past its lease that
/// drops a batch) and then claimed again by the same daemon: the claim is written afresh,
/// so another daemon finds it held. Left in place instead (an earlier fix against removing
/// a lease under a taker), the claim was taken back as this daemon's own without being
/// written, expired on disk, and another daemon took it too.
@Suite struct LeaseReleaseAfterExpiryTests {
    /// Two daemons of a spool with lease files (removed by the caller): `a` claimed `id`,
    /// and its lease has expired past the margin, no one having taken it meanwhile.
    static func expiredClaim(_ id: String) throws -> (layout: SpoolLayout, a: LeaseManager, b: LeaseManager) {
        let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-lease-release-\(UUID().uuidString)")
        try layout.create()
        let logger = Logger(minimum: .error)
        let a = LeaseManager(layout: layout, hostID: "host-a", seconds: 1, logger: logger)
        let b = LeaseManager(layout: layout, hostID: "host-b", seconds: 1, logger: logger)
        _ = a.useLeaseFiles(reason: "test")
        _ = b.useLeaseFiles(reason: "test")
        #expect(a.claim(id) == .claimed)
        let deadline = Date().addingTimeInterval(10)
        while b.state(b.read(layout.lease(id))) != .expired && Date() < deadline { usleep(50_000) }
        try #require(b.state(b.read(layout.lease(id))) == .expired, "the lease expired past its margin")
        return (layout, a, b)
    }

    @Test func anExpiredClaimGivenUpAndTakenAgainIsHeldByOneDaemon() throws {
        let id = "batch-x.jsonl"
        let (layout, a, b) = try Self.expiredClaim(id)
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        a.release(id, ended: false)
        #expect(!FileManager.default.fileExists(atPath: layout.lease(id)), "removed under the takeover lock")
        #expect(a.claim(id) == .claimed)
        #expect(a.stillMine(id))
        #expect(b.claim(id) == .heldElsewhere, "one daemon holds it")
    }

    /// The same, while a taker that died left the takeover lock behind: the release cannot
    /// remove the expired lease, and the daemon's next claim must not hold it as it is
    /// (expired on disk, another daemon would take it over too).
    @Test func anExpiredClaimLeftInPlaceIsNotHeldAsItIs() throws {
        let id = "batch-y.jsonl"
        let (layout, a, b) = try Self.expiredClaim(id)
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        // A dead taker's lock, fresh: neither the release nor a takeover may break it yet.
        try DurableFile.write(Array("{}".utf8), to: layout.takeover(id))
        a.release(id, ended: false)
        #expect(FileManager.default.fileExists(atPath: layout.lease(id)), "left in place: the takeover lock is taken")
        let again = a.claim(id)
        if again == .claimed {
            #expect((a.read(layout.lease(id))?.expiresAt ?? 0) > LeaseManager.now(), "a claim held is written afresh, not expired on disk")
            #expect(b.claim(id) == .heldElsewhere, "one daemon holds it")
        } else {
            #expect(again == .heldElsewhere, "\(again)")
        }
    }
}
