import Testing
@testable import LLMSpoolModel

@Suite struct CancelTargetTests {
    @Test func aPlainNameIsARequestThenABatch() {
        #expect(CancelTarget.candidates(of: "essay") == [.request(id: "essay"), .batch(name: "essay")])
    }

    @Test func aNameWithItsJsonlIsABatchOnly() {
        #expect(CancelTarget.candidates(of: "prompts.jsonl") == [.batch(name: "prompts")])
    }

    @Test func aNameNoBatchCanHaveIsARequestOnly() {
        // A batch's name follows the rules of ids, without the renaming of unsafe ones.
        #expect(CancelTarget.candidates(of: "-x") == [.request(id: "-x")])
        #expect(!CancelTarget.candidates(of: "-x").contains(.batch(name: "-x")))
    }

    @Test(arguments: ["", "a/b", "../x", ".jsonl"])
    func aPathOrNothingNamesNoBatch(name: String) {
        #expect(!CancelTarget.candidates(of: name).contains { if case .batch = $0 { true } else { false } })
    }
}
