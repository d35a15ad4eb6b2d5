import LLMSpoolModel
import Testing

@Suite struct BatchCommitRetryTests {
    @Test func thePauseDoublesFromAFifthOfASecondUpToHalfAMinute() {
        #expect(BatchCommitRetry.delay(afterFailures: 0) == 0)
        #expect(BatchCommitRetry.delay(afterFailures: -3) == 0)
        #expect(BatchCommitRetry.delay(afterFailures: 1) == 0.2)
        #expect(BatchCommitRetry.delay(afterFailures: 2) == 0.4)
        #expect(BatchCommitRetry.delay(afterFailures: 3) == 0.8)
        #expect(BatchCommitRetry.delay(afterFailures: 8) == 25.6)
        #expect(BatchCommitRetry.delay(afterFailures: 9) == 30)
        #expect(BatchCommitRetry.delay(afterFailures: 1_000) == 30)
        #expect(BatchCommitRetry.delay(afterFailures: Int.max) == 30)
    }

    @Test func aFailureHoldsTheNextTryBackByItsPause() {
        var retry = BatchCommitRetry()
        #expect(retry.mayTry(now: 0))
        _ = retry.failed("disk full", now: 100)
        #expect(!retry.mayTry(now: 100.1))
        #expect(retry.mayTry(now: 100.2))
        _ = retry.failed("disk full", now: 100.2)
        #expect(!retry.mayTry(now: 100.5))
        #expect(retry.mayTry(now: 100.61))
        #expect(retry.failures == 2)
        #expect(retry.problem == "disk full")
    }

    @Test func onlyThePowersOfTwoOfARunAreLoggedAsErrors() {
        var retry = BatchCommitRetry()
        var logged: [Int] = []
        for attempt in 1...100 where retry.failed("reason \(attempt)", now: Double(attempt) * 60) {
            logged.append(attempt)
        }
        #expect(logged == [1, 2, 4, 8, 16, 32, 64])
        #expect(retry.problem == "reason 100", "the latest reason is kept, whatever it says")
    }

    @Test func aCommitThatGoesThroughEndsTheRun() {
        var retry = BatchCommitRetry()
        let none = retry.succeeded()
        #expect(none == 0)
        _ = retry.failed("a folder is in the way", now: 10)
        _ = retry.failed("a folder is in the way", now: 11)
        let ended = retry.succeeded()
        #expect(ended == 2)
        #expect(retry == BatchCommitRetry())
        #expect(retry.mayTry(now: 11))
        let loud = retry.failed("again", now: 12)
        #expect(loud, "a new run logs its first failure")
    }
}
