import Testing
@testable import LLMSpoolModel

/// The loop pauses only with many transfers open, only for what is left of its turn, and
/// never while the daemon stops.
@Suite struct EventLoopPacingTests {
    @Test(arguments: [0, 1, EventLoopPacing.threshold - 1])
    func fewTransfersNeverPause(open: Int) {
        #expect(EventLoopPacing.pause(openTransfers: open, turnMicroseconds: 0, stopping: false) == 0)
    }

    @Test func manyTransfersPauseForWhatIsLeftOfTheTurn() {
        let open = EventLoopPacing.threshold
        let turn = EventLoopPacing.turnMicroseconds
        #expect(EventLoopPacing.pause(openTransfers: open, turnMicroseconds: 0, stopping: false) == turn)
        #expect(EventLoopPacing.pause(openTransfers: open * 100, turnMicroseconds: 1_200, stopping: false) == turn - 1_200)
        #expect(EventLoopPacing.pause(openTransfers: open, turnMicroseconds: turn, stopping: false) == 0)
        #expect(EventLoopPacing.pause(openTransfers: open, turnMicroseconds: turn * 40, stopping: false) == 0)
    }

    @Test func aStoppingDaemonDrainsWithoutPauses() {
        #expect(EventLoopPacing.pause(openTransfers: 10_000, turnMicroseconds: 0, stopping: true) == 0)
    }

    /// A clock that went back (a negative turn) is no reason to sleep longer than a turn.
    @Test func aNegativeTurnDoesNotPause() {
        #expect(EventLoopPacing.pause(openTransfers: 10_000, turnMicroseconds: -5, stopping: false) == 0)
        #expect(EventLoopPacing.pause(openTransfers: 10_000, turnMicroseconds: Int.min, stopping: false) == 0)
    }
}
