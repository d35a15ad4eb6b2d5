import Foundation
import Testing
@testable import LLMSpoolCore

/// Requests taken over from a daemon that is gone had already started there: they go to
/// the front of the queue, not behind everything that arrived since.
@Suite struct TakeoverQueueTests {
    func task(_ id: String, takenOver: Bool = false) -> TaskDescriptor {
        var task = TaskDescriptor(id: id, requestPath: "/s/outgoing/\(id).json", summary: RequestSummary(model: "m", stream: false, size: 10),
                                  history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
        task.takenOver = takenOver
        return task
    }

    func started(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap { if case .start(let task, _) = $0 { return task.id } else { return nil } }
    }

    @Test func takenOverTasksStartBeforeQueuedOnesInTheirOwnOrder() {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0)])
        #expect(started(s.handle(.arrived(.valid(task("running"))), now: 0)) == ["running"])
        for id in ["q1", "q2"] { #expect(s.handle(.arrived(.valid(task(id))), now: 0).isEmpty) }
        #expect(s.handle(.arrived(.valid(task("t1", takenOver: true))), now: 0).isEmpty)
        #expect(s.handle(.arrived(.valid(task("t2", takenOver: true))), now: 0).isEmpty)
        var order: [String] = []
        var current = "running"
        for step in 0..<4 {
            let now = Double(step + 1)
            let next = started(s.handle(.transferEnded(id: current, feedback: EndpointFeedback(.answered)), now: now))
                + started(s.handle(.finalized(id: current), now: now))
            #expect(next.count == 1)
            current = next.first ?? ""
            order.append(current)
        }
        #expect(order == ["t1", "t2", "q1", "q2"])
        #expect(s.counts.queued == 0)
    }

    @Test func aTakenOverTaskWithdrawnWhileQueuedIsSkipped() {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0)])
        _ = s.handle(.arrived(.valid(task("running"))), now: 0)
        _ = s.handle(.arrived(.valid(task("q1"))), now: 0)
        _ = s.handle(.arrived(.valid(task("t1", takenOver: true))), now: 0)
        #expect(s.handle(.requestRemoved(id: "t1"), now: 0) == [.withdrawn(id: "t1")])
        #expect(started(s.handle(.transferEnded(id: "running", feedback: EndpointFeedback(.answered)), now: 1)) == ["q1"])
    }
}
