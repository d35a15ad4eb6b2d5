import Foundation
import Testing
@testable import LLMSpoolModel

/// Starts on a multiplexing endpoint are paced so that a connection is opened only when the
/// established ones are full and no other is being set up.
@Suite struct ConnectionPacingTests {
    @Test func theFirstTransferWaitsAloneForTheFirstConnection() {
        var pacing = ConnectionPacing(streamsPerConnection: 3)
        #expect(pacing.mayStart(at: 0))
        pacing.started(at: 0)
        #expect(!pacing.mayStart(at: 0), "no connection is known yet: one being set up is enough")
        pacing.placed(on: 1)
        #expect(pacing.mayStart(at: 0) && pacing.connections == 1)
        pacing.started(at: 0)
        pacing.started(at: 0)
        #expect(!pacing.mayStart(at: 0), "the connection is full with those two on their way to it")
        pacing.placed(on: 1)
        pacing.placed(on: 1)
        #expect(pacing.mayStart(at: 0), "full and nothing waiting: the next opens the second connection")
        pacing.started(at: 0)
        #expect(!pacing.mayStart(at: 0))
        pacing.placed(on: 2)
        #expect(pacing.mayStart(at: 0) && pacing.connections == 2)
    }

    /// A server that accepts and never answers the handshake: one such wait holds the
    /// next start back only for the allowance, so attempts go on side by side.
    @Test func aHandshakeThatNeverEndsHoldsStartsBackOnlyForTheAllowance() {
        var pacing = ConnectionPacing(streamsPerConnection: 100)
        let allowance = ConnectionPacing.handshakeAllowanceSeconds
        pacing.started(at: 10)
        #expect(!pacing.mayStart(at: 10 + allowance - 0.1))
        #expect(pacing.nextChange(after: 11) == 10 + allowance, "the scheduler wakes when the allowance ends")
        #expect(pacing.mayStart(at: 10 + allowance))
        #expect(pacing.nextChange(after: 10 + allowance) == nil)
        pacing.started(at: 10 + allowance)
        pacing.started(at: 10 + allowance + 1)
        #expect(pacing.mayStart(at: 10 + allowance + 1), "while a wait past its allowance lasts, nothing is held back")
        pacing.ended(on: nil)
        #expect(pacing.waiting == 2, "the oldest wait ended (its handshake timed out)")
        #expect(!pacing.mayStart(at: 10 + allowance + 1.5), "the waits left are fresh: held back again")
        #expect(pacing.mayStart(at: 10 + 2 * allowance))
    }

    @Test func anEndFreesRoomAndAnIdleConnectionIsNotCountedAsRoom() {
        var pacing = ConnectionPacing(streamsPerConnection: 2)
        pacing.started(at: 0)
        pacing.placed(on: 7)
        pacing.started(at: 0)
        pacing.placed(on: 7)
        pacing.ended(on: 7)
        #expect(pacing.mayStart(at: 0) && pacing.connections == 1)
        pacing.ended(on: 7)
        #expect(pacing.connections == 0)
        pacing.started(at: 0)
        #expect(!pacing.mayStart(at: 0), "an idle connection counts again once a transfer is placed on it")
    }

    @Test func aTransferEndingBeforeItsConnectionStopsWaiting() {
        var pacing = ConnectionPacing(streamsPerConnection: 100)
        pacing.started(at: 0)
        #expect(!pacing.mayStart(at: 0))
        pacing.ended(on: nil)
        #expect(pacing.mayStart(at: 0) && pacing.waiting == 0)
        // Reports the engine cannot match change nothing.
        pacing.ended(on: 42)
        pacing.ended(on: nil)
        #expect(pacing.waiting == 0 && pacing.connections == 0)
    }

    @Test func aTransferMovedToAnotherConnectionIsCountedThere() {
        var pacing = ConnectionPacing(streamsPerConnection: 1)
        pacing.started(at: 0)
        pacing.placed(on: 1)
        pacing.moved(from: 1, to: 2)
        #expect(pacing.connections == 1)
        pacing.moved(from: 2, to: 2)
        pacing.ended(on: 2)
        #expect(pacing.connections == 0 && pacing.mayStart(at: 0))
    }

    // MARK: the scheduler with a model of libcurl 7.88's connection choice

    /// libcurl 7.88 placing streams: on an established connection with room; else, while no
    /// connection has said whether it multiplexes, waiting for the one being set up; else on a
    /// connection of its own (the behaviour the pacing works around).
    struct Curl788 {
        let streamsPerConnection: Int
        var established: [Int: Int] = [:]
        var settingUp: [Int: [String]] = [:]
        var knownToMultiplex = false
        var waitingForFirst: [String] = []
        var nextPort = 1
        var opened = 0
        var placedOn: [String: Int] = [:]

        mutating func add(_ id: String) -> [(String, Int)] {
            if let (port, _) = established.first(where: { $0.value < streamsPerConnection }) {
                established[port, default: 0] += 1
                placedOn[id] = port
                return [(id, port)]
            }
            if !knownToMultiplex, !settingUp.isEmpty {
                waitingForFirst.append(id)
                return []
            }
            settingUp[nextPort] = [id]
            nextPort += 1
            opened += 1
            return []
        }

        /// Every connection being set up finishes its handshake.
        mutating func handshakes() -> [(String, Int)] {
            var placed: [(String, Int)] = []
            for (port, ids) in settingUp.sorted(by: { $0.key < $1.key }) {
                established[port] = ids.count
                for id in ids { placedOn[id] = port; placed.append((id, port)) }
            }
            settingUp = [:]
            knownToMultiplex = true
            let waiting = waitingForFirst
            waitingForFirst = []
            for id in waiting { placed += add(id) }
            return placed
        }
    }

    func task(_ id: String) -> TaskDescriptor {
        TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json",
                       summary: RequestSummary(model: "m", stream: true, size: 10, estimatedTokens: 1),
                       history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
    }

    /// Drops `count` requests at once on one endpoint and runs handshakes until every one is
    /// placed; returns the connections libcurl opened.
    func connectionsOpened(count: Int, paced: Bool) -> Int {
        let gate = EndpointGate(concurrency: count, streamsPerConnection: paced ? 100 : nil, now: 0)
        var scheduler = Scheduler(concurrency: count, gates: [gate])
        var curl = Curl788(streamsPerConnection: 100)
        var pendingPlacements: [(String, Int)] = []
        func run(_ actions: [Scheduler.Action]) {
            for case .start(let task, _) in actions { pendingPlacements += curl.add(task.id) }
        }
        for index in 0..<count { run(scheduler.handle(.arrived(.valid(task("r\(index)"))), now: 0)) }
        var rounds = 0
        while curl.placedOn.count < count && rounds < 10 * count {
            rounds += 1
            pendingPlacements += curl.handshakes()
            while !pendingPlacements.isEmpty {
                let (id, port) = pendingPlacements.removeFirst()
                run(scheduler.handle(.connected(id: id, connection: port), now: 0))
            }
        }
        #expect(curl.placedOn.count == count, "every request reached a connection")
        return curl.opened
    }

    @Test func fiveThousandStreamsTakeFiftyConnections() {
        #expect(connectionsOpened(count: 5000, paced: true) == 50)
        #expect(connectionsOpened(count: 250, paced: true) == 3)
    }

    @Test func withoutPacingLibcurl788OpensAConnectionPerStreamPastTheFirst() {
        // The model reproduces what was measured: unpaced, every stream past the first
        // connection's hundred opens its own.
        #expect(connectionsOpened(count: 250, paced: false) == 151)
    }

    @Test func endsAndTheirConnectionsKeepTheCountsRight() {
        let gate = EndpointGate(concurrency: 10, streamsPerConnection: 2, now: 0)
        var scheduler = Scheduler(concurrency: 10, gates: [gate])
        func started(_ actions: [Scheduler.Action]) -> [String] {
            actions.compactMap { if case .start(let task, _) = $0 { return task.id } else { return nil } }
        }
        #expect(started(scheduler.handle(.arrived(.valid(task("a"))), now: 0)) == ["a"])
        #expect(started(scheduler.handle(.arrived(.valid(task("b"))), now: 0)).isEmpty, "waits for a's connection")
        #expect(started(scheduler.handle(.connected(id: "a", connection: 5), now: 0)) == ["b"])
        #expect(started(scheduler.handle(.arrived(.valid(task("c"))), now: 0)).isEmpty, "b is on its way to the only room")
        #expect(started(scheduler.handle(.connected(id: "b", connection: 5), now: 0)) == ["c"], "full: c opens the next")
        // A connection report for a task not in flight is ignored.
        #expect(scheduler.handle(.connected(id: "nobody", connection: 9), now: 0).isEmpty)
        #expect(started(scheduler.handle(.arrived(.valid(task("d"))), now: 0)).isEmpty)
        // c fails to connect: d may open one now.
        #expect(started(scheduler.handle(.transferEnded(id: "c", feedback: EndpointFeedback(.retryableFailure)), now: 1)) == ["d"])
        // A reload keeps what is in flight counted: d is still waiting for its connection.
        _ = scheduler.reconfigure(concurrency: 10, gates: [EndpointGate(concurrency: 10, active: 3, streamsPerConnection: 2, now: 1)], now: 1)
        #expect(started(scheduler.handle(.arrived(.valid(task("e"))), now: 1)).isEmpty)
        #expect(started(scheduler.handle(.connected(id: "d", connection: 6), now: 1)) == ["e"])
    }

    @Test func anEndpointThatDoesNotMultiplexIsNotPaced() {
        var scheduler = Scheduler(concurrency: 3, gates: [EndpointGate(concurrency: 3, now: 0)])
        var count = 0
        for id in ["a", "b", "c"] {
            count += scheduler.handle(.arrived(.valid(task(id))), now: 0).count
        }
        #expect(count == 3)
    }
}
