import Foundation
import Glibc
import Synchronization
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
        #expect(locks.claimsBoundByTime, "its own claims are now kept by their time, as the other daemon judges them")
        #expect(locks.method == .locks)
        #expect(locks.claim("s") == .claimed)
        #expect(locks.read(layout.lease("s"))?.method == .locks, "its claims stay locked: other daemons with locks judge them by their lock")
    }

    /// Both kinds of taker at once on claims free to take (let go, or a dead daemon's with
    /// locks): one wins each, never both (each takeover goes through `<id>.takeover`).
    @Test func aLockTakerAndATimeTakerNeverBothWin() throws {
        let (layout, locks, files) = try managers()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        var both = 0
        for trial in 0..<3000 {
            let id = "t\(trial)"
            let content = trial % 2 == 0
                ? #"{"owner":"let-go@host-x:1:ab","expires_at":0,"host":"host-x","method":"locks"}"#
                : #"{"owner":"host-dead:1:ab","expires_at":1,"host":"host-dead","method":"locks"}"#
            try DurableFile.replace(Array(content.utf8), at: layout.lease(id))
            let results = Mutex<[LeaseManager.Claim]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                let claim = (index == 0 ? locks : files).claim(id)
                results.withLock { $0.append(claim) }
            }
            if results.withLock({ $0 }).filter({ $0 == .claimed }).count > 1 { both += 1 }
        }
        #expect(both == 0, "both takers won \(both) of 3000 claims")
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
