import Testing
@testable import LLMSpoolModel

/// Requests held by another daemon's claim, looked at again a round at a time.
@Suite struct ClaimRecheckQueueTests {
    @Test func namesComeBackOnceARoundOldestFirstAtMostARoundsWorth() {
        var queue = ClaimRecheckQueue()
        #expect(queue.due(now: 0).isEmpty, "nothing held, nothing to look at")
        for index in 0..<(ClaimRecheckQueue.perRound + 6) { queue.add("r\(index)") }
        queue.add("r0")
        #expect(queue.count == ClaimRecheckQueue.perRound + 6, "a name is held once")
        let first = queue.due(now: 10)
        #expect(first == (0..<ClaimRecheckQueue.perRound).map { "r\($0)" })
        #expect(queue.due(now: 10.5).isEmpty, "one round a second")
        #expect(queue.due(now: 11) == (ClaimRecheckQueue.perRound..<(ClaimRecheckQueue.perRound + 6)).map { "r\($0)" })
        #expect(queue.count == 0 && queue.due(now: 12).isEmpty)
    }

    @Test func aNameStillHeldGoesToTheBackAndARemovedOneIsSkipped() {
        var queue = ClaimRecheckQueue()
        for name in ["a", "b", "c"] { queue.add(name) }
        queue.remove("b")
        #expect(queue.due(now: 0) == ["a", "c"])
        queue.add("a")  // still held after its look
        queue.add("d")
        #expect(queue.due(now: 1) == ["a", "d"])
    }

    @Test func namesRemovedAndAddedAgainDoNotGrowTheQueueWithoutBound() {
        var queue = ClaimRecheckQueue()
        queue.add("keep")
        for round in 0..<50_000 {
            queue.add("x\(round % 3)")
            queue.remove("x\(round % 3)")
        }
        queue.add("x1")
        // The live names come out once each, whatever stale places were left behind.
        var seen: [String] = []
        var now = 0.0
        while queue.count > 0 {
            seen += queue.due(now: now)
            now += 1
            if now > 2_000 { break }
        }
        #expect(seen.sorted() == ["keep", "x1"])
    }
}
