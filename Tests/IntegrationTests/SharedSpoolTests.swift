import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Several daemons on one spool, as on a share: polling, leases, takeover.
@Suite(.serialized) struct SharedSpoolTests {
    static func config(_ host: String) -> [String: Any] {
        ["watch_mode": "poll", "poll_interval_seconds": 0.2, "leases": true, "lease_seconds": 3, "host_id": host, "concurrency": 8]
    }

    func doneLines(_ log: String) -> Int {
        log.split(separator: "\n").filter { $0.contains("info: done ") || $0.contains("info: done id=") }.count
    }

    @Test func threeDaemonsAnswerEachRequestExactlyOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let names = ["d1", "d2", "d3"]
        for name in names { _ = try harness.startExtraDaemon(name, config: Self.config(name)) }
        let count = 1000
        for index in 0..<count {
            try harness.drop("s\(index)", Harness.request("shared \(index)", stub: ["latency_ms": 20]))
        }
        try waitUntil("every request is answered", timeout: 180) {
            harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".json") }.count == count
        }
        try waitUntil("outgoing is empty", timeout: 30) { harness.files(in: harness.layout.outgoing).isEmpty }
        let prompts = try harness.stubArrivals().map(\.prompt)
        #expect(prompts.count == count, "each request reached the endpoint once: \(prompts.count) arrivals")
        #expect(Set(prompts).count == count)
        for index in stride(from: 0, to: count, by: 97) {
            #expect(Harness.content(of: try harness.json(harness.layout.result("s\(index)"))) == StubAnswer.content(prompt: "shared \(index)", tokens: 8))
        }
        let shares = names.map { doneLines(harness.extraLog($0)) }
        print("shared spool: results per daemon \(shares)")
        #expect(shares.reduce(0, +) == count, "one result each: \(shares)")
        #expect(shares.allSatisfy { $0 >= count / 10 }, "the load is spread: \(shares)")
        #expect(harness.files(in: harness.layout.failed).isEmpty)
    }

    @Test func aKilledDaemonsRequestsFinishOnTheOthersWithinTheLeaseTime() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let victim = try harness.startExtraDaemon("d1", config: Self.config("d1"))
        _ = try harness.startExtraDaemon("d2", config: Self.config("d2"))
        _ = try harness.startExtraDaemon("d3", config: Self.config("d3"))
        let count = 60
        for index in 0..<count {
            try harness.drop("k\(index)", Harness.request("killed \(index)", stream: true, stub: ["tokens": 20, "token_delay_ms": 100]))
        }
        try waitUntil("d1 is streaming some of them", timeout: 20) {
            harness.extraLog("d1").components(separatedBy: "upload started").count > 3
        }
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        let killedAt = Date()
        do {
            try waitUntil("every request is answered", timeout: 90) {
                (0..<count).allSatisfy { FileManager.default.fileExists(atPath: harness.layout.result("k\($0)")) }
            }
        } catch {
            let missing = (0..<count).filter { !FileManager.default.fileExists(atPath: harness.layout.result("k\($0)")) }
            try? FileManager.default.copyItem(atPath: harness.root, toPath: "/tmp/shared-failure-\(getpid())")
            Issue.record("unanswered: \(missing); outgoing: \(harness.files(in: harness.layout.outgoing).count); leases: \(harness.files(in: harness.layout.leases))")
            throw error
        }
        // By lease expiry, or at once where file locks show the holder is gone.
        let takeovers = ["d2", "d3"].map { name in
            ["took over an expired lease", "took over the claim of a daemon that is gone"].map { harness.extraLog(name).components(separatedBy: $0).count - 1 }.reduce(0, +)
        }.reduce(0, +)
        print("shared spool: \(takeovers) leases taken over, all done \(String(format: "%.1f", Date().timeIntervalSince(killedAt))) s after the kill")
        #expect(takeovers > 0, "the killed daemon's requests were taken over")
        #expect(Date().timeIntervalSince(killedAt) < 30)
        for index in 0..<count {
            #expect(Harness.content(of: try harness.json(harness.layout.result("k\(index)"))) == StubAnswer.content(prompt: "killed \(index)", tokens: 20))
        }
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".partial") }.isEmpty)
    }
}

/// A spool on a FUSE mount (bindfs): writes made to the backing folder are invisible to
/// inotify on the mount, exactly like another machine's writes on NFS. `auto` must see
/// that from `statfs` and poll.
@Suite(.serialized) struct NetworkFolderTests {
    @Test(.enabled(if: Harness.isRoot && Harness.which("bindfs") != nil && FileManager.default.fileExists(atPath: "/dev/fuse"),
                   "needs root, bindfs and /dev/fuse"))
    func autoModePollsAFuseMountAndSeesOtherWriters() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let mount = harness.root + "/mounted"
        try Syscall.mkdir(mount, mode: 0o700)
        try Harness.run(Harness.which("bindfs")!, [harness.layout.root, mount])
        defer { _ = try? Harness.run("/bin/umount", ["-l", mount]) }
        _ = try harness.startExtraDaemon("on-mount", config: ["spool": mount, "watch_mode": "auto", "poll_interval_seconds": 0.2])
        let log = harness.extraLog("on-mount")
        #expect(log.contains("watching by polling"))
        #expect(log.contains("is on fuse"), "the reason names the filesystem")
        #expect(log.contains("claiming requests with leases"), "polling turns leases on")
        // "Another machine" writes to the backing folder.
        try harness.drop("remote", Harness.request("written elsewhere"))
        try waitUntil("the request written elsewhere is answered", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("remote"))
        }
        #expect(Harness.content(of: try harness.json(harness.layout.result("remote"))) == StubAnswer.content(prompt: "written elsewhere", tokens: 8))
    }
}

/// A daemon killed between creating its lease and writing it leaves an empty lease: it
/// must expire like any other.
@Suite struct LeaseRecoveryTests {
    @Test func anEmptyLeaseExpiresByItsFileTime() throws {
        let root = NSTemporaryDirectory() + "llmspool-lease-\(UUID().uuidString)"
        let layout = SpoolLayout(root: root)
        try layout.create()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let manager = LeaseManager(layout: layout, hostID: "me", seconds: 2, logger: Logger(minimum: .error))
        let fd = try Syscall.open(layout.lease("orphan"), O_WRONLY | O_CREAT | O_EXCL)
        Syscall.close(fd)
        #expect(manager.claim("orphan") == .heldElsewhere, "a fresh empty lease may still be being written")
        #expect(manager.isHeldElsewhere("orphan"))
        // Age it past the lease time and the margin.
        var times = [timespec(tv_sec: time(nil) - 10, tv_nsec: 0), timespec(tv_sec: time(nil) - 10, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, layout.lease("orphan"), &times, 0) == 0)
        #expect(!manager.isHeldElsewhere("orphan"))
        #expect(manager.claim("orphan") == .claimed)
        #expect(manager.stillMine("orphan"))
        manager.release("orphan", ended: false)
        #expect(!FileManager.default.fileExists(atPath: layout.lease("orphan")))
    }
}
