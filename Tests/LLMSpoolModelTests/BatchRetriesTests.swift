import LLMSpoolModel
import Testing

@Suite struct BatchRetriesTests {
    @Test func aFailedEndIsDueAfterItsPauseAndOnlyThen() {
        var ends = BatchRetries<Int>()
        #expect(ends.isEmpty)
        let got1 = ends.due(now: 0)
        #expect(got1.isEmpty)
        let loud = ends.failed("b", reason: "b.jsonl is a folder", detail: 40, now: 100)
        #expect(loud)
        let got2 = ends.due(now: 100.1)
        #expect(got2.isEmpty, "the first pause is 0.2 s")
        let got3 = ends.due(now: 100.2)
        #expect(got3 == ["b"])
        #expect(ends.entries["b"]?.detail == 40)
        #expect(ends.entries["b"]?.retry.problem == "b.jsonl is a folder")
    }

    @Test func aLookThatTriesNothingIsNotRepeatedEachRound() {
        var ends = BatchRetries<Int>()
        _ = ends.failed("b", reason: "full", detail: 0, now: 0)
        _ = ends.failed("b", reason: "full", detail: 0, now: 0.2)
        _ = ends.failed("b", reason: "full", detail: 0, now: 0.6)
        let got4 = ends.due(now: 1.4)
        #expect(got4 == ["b"])
        // Another daemon held the batch: no failure is recorded, and the next look waits the
        // pause of one try more (1.6 s after three failures and a look) rather than coming
        // at the next round, and longer after each such look.
        let got5 = ends.due(now: 1.5)
        #expect(got5.isEmpty)
        let got6 = ends.due(now: 2.9)
        #expect(got6.isEmpty)
        let got7 = ends.due(now: 3.01)
        #expect(got7 == ["b"])
        let got7a = ends.due(now: 6.1)
        #expect(got7a.isEmpty, "3.2 s after the second idle look")
        let got7b = ends.due(now: 6.3)
        #expect(got7b == ["b"])
        // A try that fails sets the pause from the failures alone again.
        _ = ends.failed("b", reason: "full", detail: 0, now: 7)
        let got7c = ends.due(now: 8.5)
        #expect(got7c.isEmpty)
        let got7d = ends.due(now: 8.7)
        #expect(got7d == ["b"], "1.6 s after the 4th failure")
        #expect(ends.failures(of: "b") == 4)
    }

    @Test func aFailureAfterALookSetsThePauseFromTheRunSoFar() {
        var ends = BatchRetries<String>()
        for second in 0..<8 { _ = ends.failed("b", reason: "full", detail: "x", now: Double(second) * 100) }
        let got8 = ends.due(now: 725.5)
        #expect(got8.isEmpty)
        let got9 = ends.due(now: 725.7)
        #expect(got9 == ["b"], "25.6 s after the 8th failure")
        _ = ends.failed("b", reason: "full", detail: "y", now: 726)
        let got10 = ends.due(now: 755.9)
        #expect(got10.isEmpty)
        let got11 = ends.due(now: 756.1)
        #expect(got11 == ["b"], "30 s at most")
        #expect(ends.entries["b"]?.detail == "y", "the latest detail is shown")
    }

    @Test func aBatchIsWaitingOnlyWhileHeldAndWithinItsPause() {
        var ends = BatchRetries<Int>()
        #expect(!ends.isWaiting("b", now: 0), "not held")
        _ = ends.failed("b", reason: "r", detail: 0, now: 10)
        #expect(ends.isWaiting("b", now: 10.1))
        #expect(!ends.isWaiting("b", now: 10.2), "its pause is over")
        _ = ends.succeeded("b")
        #expect(!ends.isWaiting("b", now: 10.1))
    }

    @Test func onlyThePowersOfTwoOfARunAreLoud() {
        var ends = BatchRetries<Int>()
        var loud: [Int] = []
        for failure in 1...20 where ends.failed("b", reason: "r", detail: failure, now: Double(failure) * 60) { loud.append(failure) }
        #expect(loud == [1, 2, 4, 8, 16])
    }

    @Test func aStepThatGoesThroughEndsTheRunAndANewRunIsLoudAgain() {
        var ends = BatchRetries<Int>()
        let got12 = ends.succeeded("b")
        #expect(got12 == 0)
        _ = ends.failed("b", reason: "r", detail: 1, now: 0)
        _ = ends.failed("b", reason: "r", detail: 1, now: 1)
        let got13 = ends.succeeded("b")
        #expect(got13 == 2)
        #expect(ends.isEmpty)
        #expect(ends.failures(of: "b") == 0)
        let got14 = ends.failed("b", reason: "r", detail: 1, now: 2)
        #expect(got14)
    }

    @Test func batchesAreDueEachOnItsOwnPauseInNameOrder() {
        var ends = BatchRetries<Int>()
        _ = ends.failed("z", reason: "r", detail: 0, now: 0)
        _ = ends.failed("a", reason: "r", detail: 0, now: 0)
        _ = ends.failed("m", reason: "r", detail: 0, now: 0)
        _ = ends.failed("m", reason: "r", detail: 0, now: 0.2)
        let got15 = ends.due(now: 0.3)
        #expect(got15 == ["a", "z"])
        let got16 = ends.due(now: 0.45)
        #expect(got16.isEmpty, "a and z were held back at 0.3, m's pause ends at 0.6")
        let got17 = ends.due(now: 0.61)
        #expect(got17 == ["m"], "a and z looked at once, without a try since: 0.4 s more")
        let got18 = ends.due(now: 0.71)
        #expect(got18 == ["a", "z"])
        ends.forget("a")
        #expect(ends.entries.keys.sorted() == ["m", "z"])
    }
}

@Suite struct BatchRetriesCauseTests {
    @Test func aFailureOfAnotherCauseIsLoudWhateverItsCount() {
        var ends = BatchRetries<Int>()
        let louds = [("rename b.jsonl", 0.0), ("rename b.jsonl", 1), ("rename b.jsonl", 2), ("write b.batch.json", 3),
                     ("write b.batch.json", 4), ("write b.batch.json", 5), ("write b.batch.json", 6), ("write b.batch.json", 7)]
            .map { ends.failed("b", reason: "at \($0.1)", cause: $0.0, detail: 0, now: $0.1) }
        // 1st, 2nd: the run's; 4th: the changed cause and a power of two; 5th, 6th, 7th: the
        // same cause, not powers of two; 8th: a power of two.
        #expect(louds == [true, true, false, true, false, false, false, true])
        let changedAtThird = ["a", "a", "b"].enumerated().map { ends.failed("c", reason: "", cause: $0.element, detail: 0, now: Double($0.offset)) }
        #expect(changedAtThird == [true, true, true], "the 3rd failure is loud only because its cause changed")
        let noCause = (0..<3).map { ends.failed("d", reason: "text \($0)", detail: 0, now: Double($0)) }
        #expect(noCause == [true, true, false], "without a cause a changed reason is not taken for one")
    }
}
