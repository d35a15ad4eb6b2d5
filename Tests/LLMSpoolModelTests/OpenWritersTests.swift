import LLMSpoolModel
import Testing

@Suite struct OpenWritersTests {
    @Test func aFileMadeWaitsUntilItsCloseOrTheGraceAfterItsLastWrite() {
        var writers = OpenWriters()
        writers.created("a.json", inode: 7, now: 100)
        #expect(writers.waitUntil("a.json", now: 101, grace: 60) == 160)
        writers.written("a.json", now: 150)
        #expect(writers.waitUntil("a.json", now: 170, grace: 60) == 210, "each write starts the grace again")
        #expect(writers.waitUntil("a.json", now: 210, grace: 60) == nil, "a writer silent for the whole grace is waited for no longer")
        #expect(writers.closed("a.json") == "a.json")
        #expect(writers.waitUntil("a.json", now: 171, grace: 60) == nil)
        #expect(writers.count == 0)
    }

    @Test func aFileWrittenInPlaceWaitsToo() {
        var writers = OpenWriters()
        writers.written("b.md", now: 5)
        #expect(writers.waitUntil("b.md", now: 6, grace: 2) == 7)
        #expect(writers.waitUntil("c.md", now: 6, grace: 2) == nil, "a file no writer was seen at is read at once")
    }

    @Test func anAnonymousCloseIsMatchedByInode() {
        var writers = OpenWriters()
        writers.created("x.json", inode: 16_228_540, now: 1)
        writers.created("y.json", inode: 3, now: 1)
        #expect(writers.closed("#99") == nil, "an inode linked in under no known name")
        #expect(writers.closed("#16228540") == "x.json")
        #expect(writers.waitUntil("x.json", now: 2, grace: 60) == nil)
        #expect(writers.waitUntil("y.json", now: 2, grace: 60) == 61)
    }

    @Test(arguments: ["#", "#12a", "#-1", "#١٢", "12", "#99999999999999999999999", "#12 "])
    func namesThatAreNoInode(name: String) {
        var writers = OpenWriters()
        writers.created("x.json", inode: 12, now: 0)
        writers.created(name, inode: 99, now: 0)
        #expect(writers.closed(name) == name, "closed under its own name")
        #expect(writers.waitUntil("x.json", now: 1, grace: 60) == 60, "the file of inode 12 still waits")
    }

    /// A producer that names a file `#<inode of another request>` and closes it (even
    /// removed before its close) does not get that request read before its writer is done.
    @Test func aFileMadeUnderAnInodesNameClosesAsItself() {
        var writers = OpenWriters()
        writers.created("victim.md", inode: 77, now: 0)
        writers.created("#77", inode: 78, now: 1)
        writers.forget("#77")
        #expect(writers.closed("#77") == "#77")
        #expect(writers.waitUntil("victim.md", now: 2, grace: 60) == 60, "the victim still waits for its own writer")
    }

    @Test func writesToAFileWithoutANameRefreshTheNameItWasLinkedInAs() {
        var writers = OpenWriters()
        writers.written("#5", now: 0)
        #expect(writers.count == 0, "a write before the link names nothing known: not kept")
        writers.created("a.md", inode: 5, now: 1)
        writers.written("#5", now: 50)
        #expect(writers.waitUntil("a.md", now: 70, grace: 60) == 110, "a write after the link starts the grace again")
        #expect(writers.closed("#5") == "a.md")
        #expect(writers.count == 0)
    }

    @Test func aRenameWithinTheFolderKeepsTheWriter() {
        var writers = OpenWriters()
        writers.created("a.md", inode: 1, now: 0)
        writers.movedAway("a.md", cookie: 9)
        writers.movedHere("b.md", cookie: 9)
        #expect(writers.waitUntil("b.md", now: 1, grace: 60) == 60)
        #expect(writers.waitUntil("a.md", now: 1, grace: 60) == nil)
        writers.movedAway("b.md", cookie: 10)
        writers.movedHere("c.md", cookie: 11)
        #expect(writers.waitUntil("c.md", now: 1, grace: 60) == nil, "another rename's file, closed")
        #expect(writers.count == 0)
    }

    @Test func aFileRenamedOverATrackedNameIsNotTakenForIt() {
        var writers = OpenWriters()
        writers.written("a.json", now: 0)
        writers.movedHere("a.json", cookie: 3)
        #expect(writers.waitUntil("a.json", now: 1, grace: 60) == nil)
    }

    @Test func removalsForgetAndPruningDropsOnlyExpiredWriters() {
        var writers = OpenWriters()
        writers.created("a.json", inode: 1, now: 0)
        writers.created("b.json", inode: 2, now: 0)
        writers.created("c.json", inode: 3, now: 50)
        writers.forget("a.json")
        #expect(writers.waitUntil("a.json", now: 1, grace: 60) == nil)
        #expect(writers.isTracked("b.json"))
        writers.prune(now: 70, grace: 60)
        #expect(!writers.isTracked("b.json"), "past its grace")
        #expect(writers.isTracked("c.json"))
        writers.forgetAll()
        #expect(writers.count == 0)
    }
}
