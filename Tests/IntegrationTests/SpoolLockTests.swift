import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Without leases (a local spool, inotify) two daemons would each send every request:
/// the second refuses to start.
@Suite(.serialized) struct SpoolLockTests {
    @Test func aSecondDaemonWithoutLeasesRefusesToStart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["watch_mode": "inotify"])
        // `timeout` ends a second daemon that wrongly started (exit 124) instead of hanging the test.
        let second = try Harness.spawnAndWait(["/usr/bin/timeout", "20", Harness.binary, "run", "--config", harness.configPath])
        #expect(second.status != 0 && second.status != 124, "the second daemon exits at once with an error: \(second.status)")
        #expect(second.stderr.contains("another llmspool daemon is running on"), "\(second.stderr)")
        #expect(second.stderr.contains("\"leases\": true"), "the message says how to run several")
        // The first one still works.
        try harness.drop("after", Harness.request("still served"))
        try waitUntil("the first daemon answers", timeout: 20) { Syscall.isPresent(harness.layout.result("after")) }
        // Once it stops, a new one starts.
        harness.stopDaemon()
        try harness.startDaemon(config: ["watch_mode": "inotify"])
        #expect(harness.daemonIsRunning)
    }

    /// `state` deleted while the daemon runs takes its lock file with it: the daemon locks
    /// the new one within a second or two, and a second daemon is still refused.
    @Test func aDeletedLockFileIsLockedAgain() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["watch_mode": "inotify"])
        try FileManager.default.removeItem(atPath: harness.layout.state)
        try waitUntil("the daemon locks the spool again", timeout: 20) {
            harness.log.contains("the spool's lock file was removed or replaced; it is locked again")
        }
        let second = try Harness.spawnAndWait(["/usr/bin/timeout", "20", Harness.binary, "run", "--config", harness.configPath])
        #expect(second.status != 0 && second.status != 124, "the second daemon exits at once with an error: \(second.status)")
        #expect(second.stderr.contains("another llmspool daemon is running on"), "\(second.stderr)")
        try harness.drop("after", Harness.request("served once after state was deleted"))
        try waitUntil("the first daemon answers", timeout: 20) { Syscall.isPresent(harness.layout.result("after")) }
        #expect(try harness.arrivals(of: "served once after state was deleted").count == 1)
    }

    /// A second daemon started before the first has locked a new lock file (here the first
    /// is stopped with SIGSTOP, so that it cannot) is refused by the lock on the spool's
    /// folder. Before, it started, and both sent every request until the first noticed.
    @Test func aSecondDaemonIsRefusedBeforeTheFirstLocksANewLockFile() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["watch_mode": "inotify"])
        harness.signalDaemon(SIGSTOP)
        defer { harness.signalDaemon(SIGCONT) }
        try FileManager.default.removeItem(atPath: harness.layout.state)
        let second = try Harness.spawnAndWait(["/usr/bin/timeout", "20", Harness.binary, "run", "--config", harness.configPath])
        #expect(second.status != 0 && second.status != 124, "the second daemon exits at once with an error: \(second.status)")
        #expect(second.stderr.contains("another llmspool daemon is running on"), "\(second.stderr)")
        harness.signalDaemon(SIGCONT)
        try harness.drop("after", Harness.request("served by the first"))
        try waitUntil("the first daemon answers", timeout: 20) { Syscall.isPresent(harness.layout.result("after")) }
        #expect(harness.daemonIsRunning)
    }

    /// With leases, `state` deleted while running takes `state/leases` with it: both are
    /// made again, and requests dropped after are claimed and answered. Before, no request
    /// could be claimed again until a restart (five warnings a second each).
    @Test func stateDeletedUnderADaemonWithLeasesIsMadeAgainWithItsLeasesFolder() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["watch_mode": "inotify", "leases": true, "lease_seconds": 3])
        try harness.drop("before", Harness.request("served before"))
        try waitUntil("answered before", timeout: 20) { Syscall.isPresent(harness.layout.result("before")) }
        try FileManager.default.removeItem(atPath: harness.layout.state)
        for id in ["after-1", "after-2", "after-3"] { try harness.drop(id, Harness.request("served after: \(id)")) }
        try waitUntil("every request after the removal is answered", timeout: 30) {
            ["after-1", "after-2", "after-3"].allSatisfy { Syscall.isPresent(harness.layout.result($0)) && !Syscall.isPresent(harness.layout.request($0)) }
        }
        for folder in [harness.layout.leases, harness.layout.remote, harness.layout.batches] { #expect(Syscall.isPresent(folder), "\(folder)") }
        #expect(!harness.log.contains("cannot claim the request"), "\(harness.log.split(separator: "\n").filter { $0.contains("claim") }.prefix(3))")
    }

    /// A claim that fails (here `state/leases` is a file for a while) is tried again soon,
    /// as one another daemon holds: with inotify and no rescan for an hour, nothing else
    /// would look at the request again.
    @Test func aRequestWhoseClaimFailedIsLookedAtAgainSoon() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["watch_mode": "inotify", "leases": true, "lease_seconds": 3, "rescan_interval_seconds": 3600])
        try FileManager.default.removeItem(atPath: harness.layout.leases)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: harness.layout.leases))
        try harness.drop("blocked", Harness.request("claimed once the folder is back"))
        try waitUntil("the claim fails", timeout: 20) { harness.log.contains("cannot claim the request; will look again id=blocked") }
        try FileManager.default.removeItem(atPath: harness.layout.leases)
        try Syscall.mkdir(harness.layout.leases, mode: 0o700)
        try waitUntil("the request is answered", timeout: 30) {
            Syscall.isPresent(harness.layout.result("blocked")) && !Syscall.isPresent(harness.layout.request("blocked"))
        }
        #expect(try harness.arrivals(of: "claimed once the folder is back").count == 1)
    }

    /// A daemon with leases and one without on one spool: the one without never asks for a
    /// claim, so both would send each request. Whichever starts second refuses to. Before,
    /// both ran: 20 requests sent 42 times.
    @Test(arguments: [false, true]) func daemonsWithAndWithoutLeasesRefuseToShareASpool(leasedFirst: Bool) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let plain: [String: Any] = ["watch_mode": "inotify"]
        let leased: [String: Any] = ["watch_mode": "inotify", "leases": true, "lease_seconds": 3]
        try harness.startDaemon(config: leasedFirst ? leased : plain)
        try harness.writeConfig(leasedFirst ? plain : leased)
        let second = try Harness.spawnAndWait(["/usr/bin/timeout", "20", Harness.binary, "run", "--config", harness.configPath])
        #expect(second.status != 0 && second.status != 124, "the second daemon exits at once with an error: \(second.status)")
        let expected = leasedFirst ? "another llmspool daemon is running on" : "a daemon without leases is running on"
        #expect(second.stderr.contains(expected), "\(second.stderr)")
        #expect(second.stderr.contains("\"leases\": true"), "the message says how to run several")
        try harness.drop("after", Harness.request("sent once"))
        try waitUntil("the first daemon answers", timeout: 20) { Syscall.isPresent(harness.layout.result("after")) }
        #expect(try harness.arrivals(of: "sent once").count == 1)
    }

    @Test func withLeasesSeveralDaemonsShareASpool() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let config: [String: Any] = ["watch_mode": "inotify", "leases": true, "lease_seconds": 3]
        _ = try harness.startExtraDaemon("a", config: config.merging(["host_id": "a"]) { $1 })
        _ = try harness.startExtraDaemon("b", config: config.merging(["host_id": "b"]) { $1 })
        #expect(!harness.extraLog("b").contains("another llmspool daemon"))
        for index in 0..<20 { try harness.drop("l\(index)", Harness.request("leased \(index)")) }
        try waitUntil("all answered", timeout: 30) { (0..<20).allSatisfy { Syscall.isPresent(harness.layout.result("l\($0)")) } }
        #expect(try harness.stubArrivals().count == 20)
    }
}
