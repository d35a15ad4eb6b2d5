import LLMSpoolModel
import Testing

@Suite struct SpoolRootPinTests {
    let start = SpoolRootPin.Place(device: 41, inode: 7)
    let remounted = SpoolRootPin.Place(device: 57, inode: 7)

    @Test func theRootWhereItWasIsTheSameWithoutReadingTheID() {
        let pin = SpoolRootPin(device: 41, inode: 7, spoolID: "abc")
        var reads = 0
        #expect(pin.judge(start) { reads += 1; return "abc" } == .same)
        #expect(reads == 0, "the id is read only when the root moved")
    }

    @Test(arguments: [("abc", SpoolRootPin.Judgement.mountedAgain), ("xyz", .elsewhere), (nil, .elsewhere)] as [(String?, SpoolRootPin.Judgement)])
    func aRootElsewhereIsThisSpoolOnlyByItsID(found: String?, judgement: SpoolRootPin.Judgement) {
        let pin = SpoolRootPin(device: 41, inode: 7, spoolID: "abc")
        #expect(pin.judge(remounted) { found } == judgement)
    }

    @Test func aPinWithoutAnIDNeverFollows() {
        let pin = SpoolRootPin(device: 41, inode: 7, spoolID: nil)
        #expect(pin.judge(remounted) { "abc" } == .elsewhere)
    }

    @Test func aMoveIsSeenByEveryCopyOfTheLayoutAndCountedOnce() {
        let pin = SpoolRootPin(device: 41, inode: 7, spoolID: "abc")
        let layout = SpoolLayout(root: "/spool").pinned(to: pin)
        let copy = layout
        pin.move(to: remounted)
        pin.move(to: remounted)
        #expect(copy.rootPin?.place == remounted)
        #expect(pin.moves == 1, "moving to where it is already is no move")
        #expect(pin.judge(remounted) { nil } == .same)
        #expect(pin.judge(start) { nil } == .elsewhere, "the old mount is not the spool any more")
    }
}
