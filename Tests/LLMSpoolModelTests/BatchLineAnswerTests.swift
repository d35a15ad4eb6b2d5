import Testing
@testable import LLMSpoolModel

/// A batch line's answer is held in memory up to its bound and goes to a file only past it;
/// a successful event stream's raw bytes are not kept at all.
@Suite struct BatchLineAnswerTests {
    @Test func anAnswerWithinTheBoundIsHeldWhole() {
        var answer = BatchLineAnswer(limit: 100)
        #expect(answer.arrive(40, rawNeeded: true) == .hold)
        #expect(answer.arrive(60, rawNeeded: true) == .hold, "exactly the bound is still held")
        #expect(answer.place == .memory)
        #expect(answer.held == 100)
    }

    @Test func thePiecePastTheBoundSpillsOnceAndTheRestGoesToTheFile() {
        var answer = BatchLineAnswer(limit: 100)
        #expect(answer.arrive(99, rawNeeded: true) == .hold)
        #expect(answer.arrive(2, rawNeeded: true) == .spill)
        #expect(answer.place == .file)
        #expect(answer.held == 0, "what was held is written with the spill and freed")
        #expect(answer.arrive(1, rawNeeded: true) == .write)
        #expect(answer.arrive(1_000_000, rawNeeded: true) == .write)
        #expect(answer.place == .file)
    }

    @Test func aFirstPieceLargerThanTheBoundSpillsAtOnce() {
        var answer = BatchLineAnswer(limit: 10)
        #expect(answer.arrive(11, rawNeeded: true) == .spill)
        #expect(answer.place == .file)
    }

    @Test func aZeroOrNegativeBoundHoldsNothing() {
        var zero = BatchLineAnswer(limit: 0)
        #expect(zero.arrive(0, rawNeeded: true) == .hold, "an empty piece fits any bound")
        #expect(zero.arrive(1, rawNeeded: true) == .spill)
        var negative = BatchLineAnswer(limit: -5)
        #expect(negative.limit == 0)
        #expect(negative.arrive(1, rawNeeded: true) == .spill)
    }

    @Test func noCountOverflowsTheArithmetic() {
        var answer = BatchLineAnswer(limit: Int.max)
        #expect(answer.arrive(Int.max, rawNeeded: true) == .hold)
        #expect(answer.arrive(1, rawNeeded: true) == .spill, "past Int.max held, not a trap")
        var negative = BatchLineAnswer(limit: 10)
        #expect(negative.arrive(-3, rawNeeded: true) == .hold, "a negative count counts as none")
        #expect(negative.held == 0)
    }

    @Test func aStreamNotNeededIsNeverKeptHoweverLong() {
        var answer = BatchLineAnswer(limit: 100)
        #expect(answer.arrive(50, rawNeeded: false) == .drop)
        #expect(answer.place == .notKept)
        #expect(answer.held == 0)
        for _ in 0..<1_000 { #expect(answer.arrive(4_096, rawNeeded: false) == .drop) }
        #expect(answer.arrive(10, rawNeeded: true) == .drop, "decided at the first piece, for the whole response")
        #expect(answer.place == .notKept)
    }

    @Test func theDefaultBoundIsTheSmallBodyLimit() {
        #expect(BatchLineAnswer().limit == 64 * 1024)
        #expect(BatchLineAnswer.defaultLimit == 64 * 1024)
    }

    @Test func onlyASuccessfulEventStreamThatWasAskedForNeedsNoRawBody() {
        #expect(!BatchLineAnswer.rawBodyNeeded(requestedStream: true, contentType: "text/event-stream", status: 200))
        #expect(!BatchLineAnswer.rawBodyNeeded(requestedStream: true, contentType: "Text/Event-Stream; charset=utf-8", status: 201))
        #expect(BatchLineAnswer.rawBodyNeeded(requestedStream: false, contentType: "text/event-stream", status: 200),
                "not asked for: judged as a plain answer")
        #expect(BatchLineAnswer.rawBodyNeeded(requestedStream: true, contentType: "application/json", status: 200),
                "a stream asked for, answered plain: its bytes are the answer")
        #expect(BatchLineAnswer.rawBodyNeeded(requestedStream: true, contentType: nil, status: 200))
        for status in [0, 199, 300, 400, 429, 500, 529, -1, Int.max] {
            #expect(BatchLineAnswer.rawBodyNeeded(requestedStream: true, contentType: "text/event-stream", status: status),
                    "an error's body goes into the record: \(status)")
        }
    }
}
