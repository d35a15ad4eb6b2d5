import Testing
@testable import LLMSpoolModel

/// Records every start and stop of the services it makes, in the order they happen.
private final class LifecycleLog: @unchecked Sendable {
    // @unchecked Sendable: each test drives its group from one thread only.
    var entries: [String] = []

    func service(_ name: String, failsToStart: Bool = false) -> StartStopService {
        StartStopService(name, start: { [self] in
            entries.append("start \(name)")
            if failsToStart { throw StartRefused() }
        }, stop: { [self] in
            entries.append("stop \(name)")
        })
    }
}

private struct StartRefused: Error {}

@Suite struct ServiceGroupTests {
    @Test func startsInOrderAndStopsInReverse() throws {
        let log = LifecycleLog()
        var group = ServiceGroup([log.service("a"), log.service("b"), log.service("c")])
        try group.start()
        #expect(group.runningCount == 3)
        #expect(group.failedToStart == nil)
        group.stop()
        #expect(log.entries == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
        #expect(group.runningCount == 0)
    }

    @Test(arguments: 0..<4) func aStartThatFailsStopsOnlyThoseStartedBeforeIt(failing: Int) {
        let log = LifecycleLog()
        let names = ["a", "b", "c", "d"]
        var group = ServiceGroup(names.enumerated().map { log.service($1, failsToStart: $0 == failing) })
        #expect(throws: StartRefused.self, "the service's own error, unchanged") { try group.start() }
        #expect(group.failedToStart == names[failing])
        let started = names[...failing].map { "start \($0)" }
        let stopped = names[..<failing].reversed().map { "stop \($0)" }
        #expect(log.entries == started + stopped, "the failed service is not stopped; those before it are, last first")
        #expect(group.runningCount == 0)
        group.stop()
        #expect(log.entries == started + stopped, "a failed start leaves nothing to stop later")
    }

    @Test func stoppingTwiceStopsOnce() throws {
        let log = LifecycleLog()
        var group = ServiceGroup([log.service("a"), log.service("b")])
        try group.start()
        group.stop()
        group.stop()
        #expect(log.entries == ["start a", "start b", "stop b", "stop a"])
    }

    @Test func aRunningGroupIsNotStartedAgain() throws {
        let log = LifecycleLog()
        var group = ServiceGroup([log.service("a")])
        try group.start()
        try group.start()
        group.stop()
        #expect(log.entries == ["start a", "stop a"])
    }

    @Test func anEmptyGroupStartsAndStops() throws {
        var group = ServiceGroup([])
        try group.start()
        group.stop()
        #expect(group.runningCount == 0)
    }
}
