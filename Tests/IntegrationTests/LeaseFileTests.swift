import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Lease files on a local folder, through two managers as two daemons would hold them.
@Suite struct LeaseFileTests {
    func withSpool(_ body: (SpoolLayout) throws -> Void) throws {
        let root = NSTemporaryDirectory() + "llmspool-leasefile-\(UUID().uuidString)"
        let layout = SpoolLayout(root: root)
        try layout.create()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try body(layout)
    }

    func age(_ path: String, by seconds: Int) {
        var times = [timespec(tv_sec: time(nil) - seconds, tv_nsec: 0), timespec(tv_sec: time(nil) - seconds, tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, path, &times, 0)
    }

    @Test func aFinishedIDLeavesATombstoneThatBarsEveryClaimUntilItExpires() throws {
        try withSpool { layout in
            let a = LeaseManager(layout: layout, hostID: "a", seconds: 2, logger: Logger(minimum: .error))
            let b = LeaseManager(layout: layout, hostID: "b", seconds: 2, logger: Logger(minimum: .error))
            #expect(a.claim("x") == .claimed)
            #expect(b.claim("x") == .heldElsewhere)
            a.release("x", ended: true)
            #expect(Syscall.isPresent(layout.lease("x")), "the lease became a tombstone, never absent")
            #expect(b.claim("x") == .heldElsewhere, "a stale view of the finished request cannot be claimed")
            #expect(a.claim("x") == .heldElsewhere, "nor by the daemon that finished it")
            #expect(b.isHeldElsewhere("x"))
            // Once old, the tombstone gives way to a new claim.
            age(layout.lease("x"), by: 60)
            #expect(b.claim("x") == .claimed)
            #expect(b.stillMine("x"))
            b.release("x", ended: false)
            #expect(!Syscall.isPresent(layout.lease("x")), "a release for a retry frees the id at once")
            #expect(a.claim("x") == .claimed)
        }
    }

    /// A daemon killed between the exclusive create of its lease and the write leaves an
    /// empty, unlocked lease: once a lease time old it is taken over, with locks or without.
    @Test(arguments: [true, false]) func anEmptyLeaseOfADeadCreatorIsTakenOverOnceOld(locks: Bool) throws {
        try withSpool { layout in
            let b = LeaseManager(layout: layout, hostID: "b", seconds: 2, logger: Logger(minimum: .error))
            if locks { #expect(b.chooseMethod().method == .locks) }
            #expect(FileManager.default.createFile(atPath: layout.lease("x"), contents: Data()))
            #expect(b.claim("x") == .heldElsewhere, "a lease just created may still be written by its creator")
            age(layout.lease("x"), by: 60)
            #expect(b.claim("x") == .claimed, "an empty lease past its time barred the id for ever")
            #expect(b.stillMine("x"))
            b.release("x", ended: false)
        }
    }

    @Test func withLocksAHeldClaimAndItsTombstoneStayLocked() throws {
        try withSpool { layout in
            let a = LeaseManager(layout: layout, hostID: "a", seconds: 2, logger: Logger(minimum: .error))
            let b = LeaseManager(layout: layout, hostID: "b", seconds: 2, logger: Logger(minimum: .error))
            let choice = a.chooseMethod()
            b.chooseMethod()
            #expect(choice.method == .locks, "a local folder serves locks: \(choice.reason)")
            #expect(a.claim("x") == .claimed)
            // Aged past its expiry, the content alone would let b take it: the lock says a lives.
            age(layout.lease("x"), by: 60)
            #expect(b.claim("x") == .heldElsewhere)
            #expect(b.isHeldElsewhere("x"))
            a.release("x", ended: true)
            #expect(b.claim("x") == .heldElsewhere, "the tombstone bars it")
            a.stopKeeper()  // waits out the stale-cache window, then removes its tombstones
            #expect(!Syscall.isPresent(layout.lease("x")), "a clean stop removes its tombstones")
            #expect(b.claim("x") == .claimed)
            b.release("x", ended: false)
        }
    }

    @Test func aWildExpiryCannotBarAnIDForEver() throws {
        try withSpool { layout in
            let path = layout.lease("wild")
            try DurableFile.write(Array(#"{"owner":"evil:1:x","expires_at":1e300}"#.utf8), to: path)
            let manager = LeaseManager(layout: layout, hostID: "me", seconds: 2, logger: Logger(minimum: .error))
            #expect(manager.isHeldElsewhere("wild"), "fresh: it may be a live claim")
            age(path, by: 60)
            #expect(!manager.isHeldElsewhere("wild"), "bounded by the file's time")
            #expect(manager.claim("wild") == .claimed)
        }
    }
}
