import Foundation
import LLMSpoolCore
import Testing

/// A daemon killed mid-write leaves its roster entry, or the temporary of one, in
/// `state/daemons`; the next run of the same host removes them, and nobody else's.
@Suite(.serialized) struct RosterCleanupTests {
    @Test func namesOfThisHostAreRead() {
        #expect(DaemonRoster.pid(inName: "h1.42.json", safeHost: "h1") == 42)
        #expect(DaemonRoster.pid(inName: ".h1.42.json.tmp", safeHost: "h1") == 42)
        #expect(DaemonRoster.pid(inName: "a.b.7.json", safeHost: "a.b") == 7)
        #expect(DaemonRoster.pid(inName: "h2.42.json", safeHost: "h1") == nil)
        #expect(DaemonRoster.pid(inName: "h1.x.json", safeHost: "h1") == nil)
        #expect(DaemonRoster.pid(inName: "h1.-3.json", safeHost: "h1") == nil)
        #expect(DaemonRoster.pid(inName: "h1.42.json.tmp", safeHost: "h1") == nil)
        #expect(DaemonRoster.pid(inName: "h1.99999999999.json", safeHost: "h1") == nil)
    }

    @Test func aRestartRemovesWhatItsDeadRunsLeft() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try Syscall.mkdir(harness.layout.daemons, mode: 0o700)
        // A pid that cannot be alive: past the kernel's pid_max.
        let dead: Int32 = 2_000_000_000
        let leftovers = ["h1.\(dead).json", ".h1.\(dead).json.tmp"]
        let others = [".h2.\(dead).json.tmp", "h2.\(dead).json", "notes.txt"]
        for name in leftovers + others {
            // Written in place: writing `h2.….json` through a temporary would use `.h2.….json.tmp`.
            #expect(FileManager.default.createFile(atPath: harness.layout.daemons + "/" + name, contents: Data("{}".utf8)))
        }
        #expect(Set(harness.files(in: harness.layout.daemons)) == Set(leftovers + others), "written")
        try harness.startDaemon(config: ["leases": true, "host_id": "h1", "watch_mode": "poll", "poll_interval_seconds": 0.2])
        try waitUntil("this host's own entry appears", timeout: 20) {
            harness.files(in: harness.layout.daemons).contains { $0.hasPrefix("h1.") && $0 != "h1.\(dead).json" }
        }
        let left = Set(harness.files(in: harness.layout.daemons))
        for name in leftovers { #expect(!left.contains(name), "\(name) outlived its run") }
        for name in others { #expect(left.contains(name), "\(name) is not this host's to remove") }
    }
}
