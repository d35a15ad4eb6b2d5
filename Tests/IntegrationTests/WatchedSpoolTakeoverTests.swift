import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Two daemons with leases on one local spool, each watching it with inotify: when one is
/// killed, nothing in the folder changes, so the other must find the dead daemon's claims
/// by looking at them again. The periodic rescan is set out of reach (an hour): only that
/// second look can take them over.
@Suite(.serialized) struct WatchedSpoolTakeoverTests {
    static func config(_ host: String) -> [String: Any] {
        ["watch_mode": "inotify", "leases": true, "lease_seconds": 3, "host_id": host, "concurrency": 8, "rescan_interval_seconds": 3600]
    }

    @Test func aKilledDaemonsClaimsAreTakenOverWithoutWaitingForARescan() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let victim = try harness.startExtraDaemon("d1", config: Self.config("d1"))
        _ = try harness.startExtraDaemon("d2", config: Self.config("d2"))
        let count = 24
        for index in 0..<count {
            try harness.drop("w\(index)", Harness.request("watched \(index)", stream: true, stub: ["tokens": 20, "token_delay_ms": 100]))
        }
        try waitUntil("d1 is streaming some of them", timeout: 20) {
            harness.extraLog("d1").components(separatedBy: "upload started").count > 3
        }
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        do {
            try waitUntil("every request is answered", timeout: 60) {
                (0..<count).allSatisfy { Syscall.isPresent(harness.layout.result("w\($0)")) } && harness.files(in: harness.layout.outgoing).isEmpty
            }
        } catch {
            let missing = (0..<count).filter { !Syscall.isPresent(harness.layout.result("w\($0)")) }
            Issue.record("unanswered after the kill: \(missing)")
            throw error
        }
        let survivor = harness.extraLog("d2")
        #expect(survivor.contains("took over"), "d2 took the killed daemon's claims over")
        for index in 0..<count {
            #expect(Harness.content(of: try harness.json(harness.layout.result("w\(index)"))) == StubAnswer.content(prompt: "watched \(index)", tokens: 20))
            let sent = try harness.arrivals(of: "watched \(index)").count
            #expect(sent == 1 || sent == 2, "w\(index): sent \(sent) times (once, or again after the kill)")
        }
        #expect(harness.files(in: harness.layout.failed).isEmpty)
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".partial") }.isEmpty)
    }
}
