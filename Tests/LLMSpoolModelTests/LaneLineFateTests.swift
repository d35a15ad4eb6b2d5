import Testing
@testable import LLMSpoolModel

/// Every combination of what a batch's input and journal say of a line member of a group
/// whose outcomes are handed over.
@Suite struct LaneLineFateTests {
    static let inputs: [LaneLineFate.Input] = [.same, .changed, .unknown]
    static let journals: [LaneLineFate.Journal] = [.committed, .retried, .open]

    @Test(arguments: LaneLineFateTests.inputs, LaneLineFateTests.journals)
    func aChangedInputDiscardsAndAnUnknownOneWaits(input: LaneLineFate.Input, journal: LaneLineFate.Journal) {
        for atHand in [false, true] {
            let fate = LaneLineFate.decide(input: input, atHand: atHand, journal: journal)
            switch input {
            case .changed: #expect(fate == .discard, "the batch was deleted or replaced: nobody wants the answer")
            case .unknown: #expect(fate == .wait, "a failed look is looked at again, never taken as an end")
            case .same: #expect(fate != .discard, "the batch is there: its line is wanted")
            }
        }
    }

    @Test(arguments: LaneLineFateTests.journals)
    func aLineAtHandIsPublished(journal: LaneLineFate.Journal) {
        #expect(LaneLineFate.decide(input: .same, atHand: true, journal: journal) == .publish)
    }

    @Test func aLineNotAtHandIsDoneWithWhenTheJournalHasItAndElseWaits() {
        #expect(LaneLineFate.decide(input: .same, atHand: false, journal: .committed) == .handedOver, "never published twice")
        #expect(LaneLineFate.decide(input: .same, atHand: false, journal: .retried) == .handedOver, "retried live, not answered again from the batch")
        #expect(LaneLineFate.decide(input: .same, atHand: false, journal: .open) == .wait, "the runner feeds it again after a restart")
    }
}
