import LLMSpoolModel
import Testing

@Suite struct SpoolRootIdentityTests {
    static let fuse: Int64 = 0x6573_5546
    let pinned = SpoolRootIdentity(place: .init(device: 41, inode: 7), fileSystemType: SpoolRootIdentityTests.fuse, isMountRoot: true, spoolID: "abc")
    let remounted = SpoolRootIdentity.Place(device: 57, inode: 7)

    @Test func theRootWhereItWasIsTheSameWithoutLookingFurther() {
        var looks = 0
        #expect(pinned.judge(.init(device: 41, inode: 7)) { looks += 1; return (Self.fuse, true, .id("abc")) } == .same)
        #expect(looks == 0, "the id is read only when the root moved")
    }

    @Test func theSameSpoolOnTheSameKindOfMountIsMountedAgain() {
        #expect(pinned.judge(remounted) { (Self.fuse, true, .id("abc")) } == .mountedAgain)
    }

    @Test(arguments: [
        (SpoolRootIdentity.IDRead.id("xyz"), "another spool's"),
        (.missing, "no state/.spool-id"),
        (.unusable, "holds no id"),
        (.unreadable("EIO"), "cannot be read (EIO)"),
    ])
    func anotherIDOrNoneIsElsewhereAndSaysWhy(read: SpoolRootIdentity.IDRead, words: String) {
        guard case .elsewhere(let why) = pinned.judge(remounted, candidate: { (Self.fuse, true, read) }) else {
            Issue.record("not held")
            return
        }
        #expect(why.contains(words), "\(why)")
    }

    @Test func aRootThatBecameALinkIsElsewhereUnlessItWasOneAtStart() {
        #expect(pinned.judgeLink(rootIsLink: false) == nil)
        guard case .elsewhere(let why)? = pinned.judgeLink(rootIsLink: true) else {
            Issue.record("a root made a link is not held")
            return
        }
        #expect(why.contains("symbolic link now"))
        var configuredThroughALink = pinned
        configuredThroughALink.reachedThroughLink = true
        #expect(configuredThroughALink.judgeLink(rootIsLink: true) == nil)
    }

    /// A copy of the spool left on the disk under the mount point has the same id: what
    /// it is tells it from the share.
    @Test func aCopyUnderTheMountPointIsNotTheSpool() {
        let ext4: Int64 = 0xEF53
        guard case .elsewhere(let why) = pinned.judge(remounted, candidate: { (ext4, false, .id("abc")) }) else {
            Issue.record("a copy on another filesystem was followed")
            return
        }
        #expect(why.contains("another kind of filesystem"))
        guard case .elsewhere(let other) = pinned.judge(remounted, candidate: { (Self.fuse, false, .id("abc")) }) else {
            Issue.record("a root that is no mount point was followed")
            return
        }
        #expect(other.contains("not a mount point"))
    }

    @Test func aPinWithoutAnIDNeverFollows() {
        var unknown = pinned
        unknown.spoolID = nil
        #expect(unknown.judge(remounted) { (Self.fuse, true, .id("abc")) } == .elsewhere("the spool's id was not known at start"))
    }
}

@Suite struct SpoolIDTests {
    @Test func anIDIsThirtyTwoLowercaseHexDigitsAndANewline() {
        let id = SpoolID.format(0x0123_4567_89ab_cdef, 0xf)
        #expect(id == "0123456789abcdef000000000000000f")
        #expect(SpoolID.parse(SpoolID.fileContent(id)) == id)
        #expect(SpoolID.parse(Array(id.utf8)) == id, "the newline may be missing")
    }

    @Test(arguments: ["", "\n", "0123456789abcdef", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef 0123456789abcdef",
                      "0123456789abcdef0123456789abcdef0", "0123456789abcdef0123456789abcdef\n\n", "0123456789abcdef012345678\n9abcdef"])
    func anythingElseIsNoID(text: String) {
        #expect(SpoolID.parse(Array(text.utf8)) == nil)
    }
}
