import Testing
@testable import LLMSpoolModel

@Suite struct AttemptClockTests {
    @Test func onlyContentResetsTheIdleTimer() {
        var clock = AttemptClock(startedAt: 100)
        #expect(clock.expired(at: 104.9, idleLimit: 5, totalLimit: 60) == nil)
        #expect(clock.expired(at: 105, idleLimit: 5, totalLimit: 60) == .idle)
        clock.contentArrived(at: 104)
        #expect(clock.expired(at: 108, idleLimit: 5, totalLimit: 60) == nil)
        #expect(clock.expired(at: 109, idleLimit: 5, totalLimit: 60) == .idle)
        #expect(clock.idleSeconds(at: 109) == 5)
    }

    @Test func theTotalDeadlineHoldsWhateverArrives() {
        var clock = AttemptClock(startedAt: 0)
        for second in stride(from: 1.0, through: 59.0, by: 1.0) {
            clock.contentArrived(at: second)
            #expect(clock.expired(at: second, idleLimit: 5, totalLimit: 60) == nil)
        }
        clock.contentArrived(at: 60)
        #expect(clock.expired(at: 60, idleLimit: 5, totalLimit: 60) == .total, "the total deadline wins a tie")
    }

    @Test func timeNeverRunsBackwards() {
        var clock = AttemptClock(startedAt: 10)
        clock.contentArrived(at: 20)
        clock.contentArrived(at: 15)
        #expect(clock.lastContent == 20)
    }
}
