import Testing
@testable import LLMSpoolModel

/// The loop pauses only with many transfers open, only for what is left of its turn, and
/// never while the daemon stops or a bulk answer is arriving.
@Suite struct EventLoopPacingTests {
    /// The pause after one turn of `turn` seconds that started at `at`, in which transfers
    /// received `bytes` each (as their running sums for the turn).
    func pause(_ pacing: inout EventLoopPacing, open: Int = 10_000, turn: Double = 0, at: Double = 0,
               bytes: [Int] = [], stopping: Bool = false) -> Int32 {
        for sum in bytes { pacing.transferReceived(turnBytes: sum) }
        return pacing.endTurn(started: at, ended: at + turn, openTransfers: open, stopping: stopping)
    }

    func pause(open: Int = 10_000, turn: Double = 0, bytes: [Int] = [], stopping: Bool = false) -> Int32 {
        var pacing = EventLoopPacing()
        return pause(&pacing, open: open, turn: turn, bytes: bytes, stopping: stopping)
    }

    @Test(arguments: [0, 1, EventLoopPacing.threshold - 1])
    func fewTransfersNeverPause(open: Int) {
        #expect(pause(open: open) == 0)
    }

    @Test func manyTransfersPauseForWhatIsLeftOfTheTurn() {
        let turn = Int32(EventLoopPacing.turnMilliseconds)
        #expect(pause(open: EventLoopPacing.threshold) == turn)
        #expect(pause(turn: 0.0012) == turn - 1, "a fraction of a millisecond left is rounded up")
        #expect(pause(turn: 0.001) == turn - 1)
        #expect(pause(turn: Double(turn) / 1000) == 0)
        #expect(pause(turn: 0.2) == 0)
    }

    @Test func aStoppingDaemonDrainsWithoutPauses() {
        #expect(pause(stopping: true) == 0)
    }

    @Test func aBulkTurnDoesNotPause() {
        #expect(pause(bytes: [EventLoopPacing.bulkBytes - 1]) == Int32(EventLoopPacing.turnMilliseconds))
        #expect(pause(bytes: [EventLoopPacing.bulkBytes]) == 0)
        #expect(pause(bytes: [Int.max]) == 0)
    }

    /// Thousands of streams' few hundred bytes each are not a bulk answer: only one
    /// transfer's own sum counts.
    @Test func manySmallTransfersAreNoBulkAnswer() {
        let streams = Array(repeating: 400, count: 10_000)
        #expect(pause(bytes: streams) == Int32(EventLoopPacing.turnMilliseconds))
    }

    /// A transfer reports its running sum for the turn at each flush (libcurl's pieces are
    /// flushed at 64 KiB mid-turn and the rest at the turn's end): the sum decides, not the
    /// last piece, however small.
    @Test func aTransfersRunningSumDecidesNotItsLastFlush() {
        let sums = [EventLoopPacing.bulkBytes / 2, EventLoopPacing.bulkBytes + 10]
        #expect(pause(bytes: sums) == 0)
    }

    /// A bulk answer's turns are not all full: the loop stays unpaced for a while after one.
    @Test func aRecentBulkTurnKeepsTheLoopUnpaced() {
        let full = Int32(EventLoopPacing.turnMilliseconds)
        var pacing = EventLoopPacing()
        #expect(pause(&pacing, at: 100, bytes: [EventLoopPacing.bulkBytes]) == 0)
        #expect(pacing.lastBulkTurnEnded == 100)
        #expect(pause(&pacing, at: 100) == 0)
        #expect(pause(&pacing, at: 100 + EventLoopPacing.bulkQuietSeconds / 2) == 0)
        #expect(pause(&pacing, at: (100 + EventLoopPacing.bulkQuietSeconds).nextDown) == 0)
        #expect(pause(&pacing, at: 100 + EventLoopPacing.bulkQuietSeconds) == full)
        #expect(pause(&pacing, at: 160) == full)
        #expect(pacing.lastBulkTurnEnded == 100, "turns without a bulk answer leave the last one's time")
        #expect(pause(&pacing, at: 99) == 0, "a clock that went back is taken as a bulk turn just now")
    }

    /// What a turn carried is forgotten when it ends: a bulk turn is not counted again.
    @Test func aTurnsBytesEndWithIt() {
        var pacing = EventLoopPacing()
        pacing.transferReceived(turnBytes: EventLoopPacing.bulkBytes)
        #expect(pacing.bulkThisTurn)
        _ = pacing.endTurn(started: 0, ended: 1, openTransfers: 10_000, stopping: false)
        #expect(!pacing.bulkThisTurn)
        #expect(pause(&pacing, at: 10) == Int32(EventLoopPacing.turnMilliseconds))
    }

    /// A clock that went back, or a turn that is not a number, is no reason to sleep.
    @Test(arguments: [-0.000005, -Double.infinity, Double.infinity, Double.nan, -Double.greatestFiniteMagnitude])
    func anOddTurnDoesNotPause(turn: Double) {
        #expect(pause(turn: turn) == 0)
    }

    /// An end time that is not a number gives no pause, and leaves no bulk time behind
    /// that would hold the loop unpaced (or paced) by mistake later.
    @Test(arguments: [Double.nan, Double.infinity, -Double.infinity])
    func anOddClockDoesNotPause(at: Double) {
        var pacing = EventLoopPacing()
        #expect(pacing.endTurn(started: 0, ended: at, openTransfers: 10_000, stopping: false) == 0)
        #expect(pacing.endTurn(started: 0, ended: at, openTransfers: 10_000, stopping: false) == 0)
    }
}
