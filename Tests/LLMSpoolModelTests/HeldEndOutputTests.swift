import LLMSpoolModel
import Testing

@Suite struct HeldEndOutputTests {
    @Test func anOutputNamedAlreadyIsNeverLost() {
        for partial in [HeldEndOutput.Partial.absent, .other, .regular(size: 0), .regular(size: 100)] {
            #expect(!HeldEndOutput.isLost(outputUnnamed: false, partial: partial, committedLength: 100), "\(partial)")
        }
    }

    @Test func anUnnamedOutputIsLostWhenItsPartialIsGoneForeignOrCut() {
        #expect(HeldEndOutput.isLost(outputUnnamed: true, partial: .absent, committedLength: 100))
        #expect(HeldEndOutput.isLost(outputUnnamed: true, partial: .other, committedLength: 0), "a link or FIFO, even for an empty output")
        #expect(HeldEndOutput.isLost(outputUnnamed: true, partial: .regular(size: 0), committedLength: 100), "emptied")
        #expect(HeldEndOutput.isLost(outputUnnamed: true, partial: .regular(size: 99), committedLength: 100), "cut by a byte")
        #expect(!HeldEndOutput.isLost(outputUnnamed: true, partial: .regular(size: 100), committedLength: 100))
        #expect(!HeldEndOutput.isLost(outputUnnamed: true, partial: .regular(size: 150), committedLength: 100),
                "longer: bytes past the committed ones are not the end's to judge (the rename publishes what is there)")
    }
}
