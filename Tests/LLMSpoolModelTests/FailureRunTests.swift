import LLMSpoolModel
import Testing

@Suite struct FailureRunTests {
    @Test func theFirstAndEachDoublingOfARunAreLogged() {
        var run = FailureRun()
        let logged = (1...1_000).filter { _ in run.failed() }
        #expect(logged == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
        #expect(run.count == 1_000)
    }

    @Test func aSuccessEndsTheRunAndSaysHowLongItWas() {
        var run = FailureRun()
        let none = run.succeeded()
        #expect(none == 0)
        _ = run.failed()
        _ = run.failed()
        _ = run.failed()
        let ended = run.succeeded()
        #expect(ended == 3)
        #expect(run == FailureRun())
        let first = run.failed()
        #expect(first, "the next run logs its first failure")
    }
}
