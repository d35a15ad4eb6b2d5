import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// A daemon holding its claims under locks and one holding them by lease files alone, on
/// one spool: the lease-files claim holds no lock, so its free lock must not be taken for
/// a dead owner's; and the daemon with locks claims as the other does from then on.
@Suite struct MixedClaimLeaseTests {
    func managers() throws -> (layout: SpoolLayout, locks: LeaseManager, files: LeaseManager) {
        let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-mixed-claims-\(UUID().uuidString)")
        try layout.create()
        let logger = Logger(minimum: .error)
        let locks = LeaseManager(layout: layout, hostID: "host-locks", seconds: 30, logger: logger)
        let files = LeaseManager(layout: layout, hostID: "host-files", seconds: 30, logger: logger)
        try #require(locks.chooseMethod().method == .locks, "a local folder serves locks")
        _ = files.useLeaseFiles(reason: "its mount keeps locks local")
        return (layout, locks, files)
    }

    @Test func aLeaseFilesClaimIsHeldElsewhereForADaemonWithLocks() throws {
        let (layout, locks, files) = try managers()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        #expect(files.claim("r") == .claimed)
        #expect(locks.look("r") == .heldElsewhere, "its lock is free, but it never had one")
        #expect(locks.claim("r") == .heldElsewhere)
        #expect(files.stillMine("r"))
        #expect(locks.method == .leaseFiles, "the daemon with locks now claims as the other does")
        #expect(locks.claim("s") == .claimed)
        #expect(locks.read(layout.lease("s"))?.method == .leaseFiles, "its new leases say so")
    }

    @Test func aLeaseOfAnEarlierVersionIsStillJudgedByItsLock() throws {
        let (layout, locks, _) = try managers()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        // Written as an earlier daemon with locks wrote it, whose process is gone (no lock held).
        let content = #"{"owner":"host-old:1:ab","expires_at":\#(LeaseManager.now() + 30),"host":"host-old"}"#
        try DurableFile.replace(Array(content.utf8), at: layout.lease("r"))
        #expect(locks.look("r") == .abandoned, "a free lock still means its owner is gone")
        #expect(locks.claim("r") == .claimed)
        #expect(locks.method == .locks)
    }

    @Test func aLeftoverOfALeaseFilesClaimIsNotRemovedByADaemonWithLocks() throws {
        let (layout, locks, files) = try managers()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        #expect(files.claim("r") == .claimed)
        var removed = false
        #expect(!locks.removeLeftover(of: "r") { removed = true })
        #expect(!removed, "the .partial of a live lease-files claim stays")
    }
}
