import Testing
@testable import LLMSpoolModel

/// The loop pauses only with many transfers open, only for what is left of its turn, and
/// never while the daemon stops or a bulk answer is arriving.
@Suite struct EventLoopPacingTests {
    func pause(open: Int = 10_000, turn: Double = 0, bytes: Int = 0, sinceBulk: Double = .infinity, stopping: Bool = false) -> Int32 {
        EventLoopPacing.pauseMilliseconds(openTransfers: open, turnSeconds: turn, largestTransferBytes: bytes,
                                          secondsSinceBulk: sinceBulk, stopping: stopping)
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
        #expect(pause(bytes: EventLoopPacing.bulkBytes - 1) == Int32(EventLoopPacing.turnMilliseconds))
        #expect(pause(bytes: EventLoopPacing.bulkBytes) == 0)
        #expect(pause(bytes: Int.max) == 0)
    }

    /// A bulk answer's turns are not all full: the loop stays unpaced for a while after one.
    @Test func aRecentBulkTurnKeepsTheLoopUnpaced() {
        let full = Int32(EventLoopPacing.turnMilliseconds)
        #expect(pause(sinceBulk: 0) == 0)
        #expect(pause(sinceBulk: EventLoopPacing.bulkQuietSeconds / 2) == 0)
        #expect(pause(sinceBulk: EventLoopPacing.bulkQuietSeconds.nextDown) == 0)
        #expect(pause(sinceBulk: EventLoopPacing.bulkQuietSeconds) == full)
        #expect(pause(sinceBulk: 60) == full)
        #expect(pause(sinceBulk: -1) == 0, "a clock that went back is taken as a bulk turn just now")
    }

    /// A clock that went back, or a turn that is not a number, is no reason to sleep.
    @Test(arguments: [-0.000005, -Double.infinity, Double.infinity, Double.nan, -Double.greatestFiniteMagnitude])
    func anOddTurnDoesNotPause(turn: Double) {
        #expect(pause(turn: turn) == 0)
    }
}
