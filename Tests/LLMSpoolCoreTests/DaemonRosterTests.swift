import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct DaemonRosterTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    @Test func anEntryReadsBackAsWritten() {
        let entry = DaemonRoster.Entry(host: "web-1", pid: 42, updatedAt: now, queued: 3, deferred: 1, inFlight: 7)
        #expect(DaemonRoster.Entry.parse(entry.encoded()) == entry)
        #expect(DaemonRoster.Entry.parse(Array("{}".utf8)) == nil)
        #expect(DaemonRoster.Entry.parse(Array("not json".utf8)) == nil)
    }

    @Test func liveMeansFreshAndForThisHostAProcessThatExists() {
        let fresh = DaemonRoster.Entry(host: "other", pid: 42, updatedAt: now.addingTimeInterval(-1), queued: 0, deferred: 0, inFlight: 0)
        #expect(DaemonRoster.isLive(fresh, now: now, localHost: "me", isAlive: { _ in false }), "another host's pid is not checked here")
        var stale = fresh
        stale.updatedAt = now.addingTimeInterval(-LiveStatus.staleAfterSeconds - 1)
        #expect(!DaemonRoster.isLive(stale, now: now, localHost: "me", isAlive: { _ in true }))
        var local = fresh
        local.host = "me"
        #expect(!DaemonRoster.isLive(local, now: now, localHost: "me", isAlive: { _ in false }), "this host's dead process")
        #expect(DaemonRoster.isLive(local, now: now, localHost: "me", isAlive: { $0 == 42 }))
    }

    @Test func hostIDsBecomeSafeFileNames() {
        let layout = SpoolLayout(root: "/s")
        #expect(DaemonRoster.path(layout, host: "web-1.example", pid: 7) == "/s/state/daemons/web-1.example.7.json")
        #expect(DaemonRoster.path(layout, host: "a/b\n:c", pid: 7) == "/s/state/daemons/a_b__c.7.json")
        #expect(DaemonRoster.path(layout, host: "", pid: 7) == "/s/state/daemons/_.7.json")
    }
}
