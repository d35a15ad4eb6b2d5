import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// `HeldFile`: a file written through a descriptor held open, whose name is lost, taken by
/// another file, or taken over from a daemon that may still write to it.
@Suite struct HeldFileTests {
    let layout: SpoolLayout
    let logger = Logger(minimum: .error, sink: { _ in })

    init() throws {
        layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-held-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(atPath: layout.incoming, withIntermediateDirectories: true)
    }

    func removeSpool() {
        try? FileManager.default.removeItem(atPath: layout.root)
    }

    func held(_ path: String, _ content: String) throws -> FileDescriptor {
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL | O_APPEND, mode: 0o600)
        try file.writeAll(Array(content.utf8))
        return file
    }

    @Test func theNameOfAHeldFileIsHeldMissingOrAnother() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/a.jsonl.partial"
        let file = try held(path, "one\n")
        #expect(try HeldFile.name(file.rawValue, path: path) == .held)
        try Syscall.unlinkIfPresent(path)
        #expect(try HeldFile.name(file.rawValue, path: path) == .missing)
        try DurableFile.write(Array("other\n".utf8), to: path, syncDirectory: false)
        #expect(try HeldFile.name(file.rawValue, path: path) == .another)
        #expect(try HeldFile.lostName(file.rawValue, path: path))
    }

    @Test func aLostNameIsGivenBackWithEveryByteOfTheHeldFile() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/b.jsonl.partial"
        let file = try held(path, String(repeating: "line\n", count: 40_000))
        try Syscall.unlinkIfPresent(path)
        let copy = try HeldFile.giveNameAgain(from: file.rawValue, to: path, flags: O_RDWR | O_APPEND, replacing: false, layout: layout,
                                              logger: logger)
        try copy.writeAll(Array("next\n".utf8))
        #expect(try FileReader.prefix(path: path, limit: 1 << 20) == Array((String(repeating: "line\n", count: 40_000) + "next\n").utf8))
        #expect(try HeldFile.name(copy.rawValue, path: path) == .held, "the copy returned is the file under the name")
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "given the name by a second link, its temporary name removed")
    }

    /// On a shared spool the file found under the name is another daemon's: the held copy
    /// never replaces it. On a local one it is a person's or a tool's, and is replaced.
    @Test(arguments: [false, true]) func aNameTakenByAnotherFileIsReplacedOnlyOnALocalSpool(replacing: Bool) throws {
        defer { removeSpool() }
        let path = layout.incoming + "/c.jsonl.partial"
        let file = try held(path, "mine\n")
        try Syscall.unlinkIfPresent(path)
        try DurableFile.write(Array("theirs\n".utf8), to: path, syncDirectory: false)
        if replacing {
            let copy = try HeldFile.giveNameAgain(from: file.rawValue, to: path, flags: O_RDWR | O_APPEND, replacing: true, layout: layout,
                                                  logger: logger)
            #expect(try HeldFile.name(copy.rawValue, path: path) == .held)
            #expect(try FileReader.prefix(path: path, limit: 100) == Array("mine\n".utf8))
        } else {
            #expect(throws: SystemError.self) {
                _ = try HeldFile.giveNameAgain(from: file.rawValue, to: path, flags: O_RDWR | O_APPEND, replacing: false, layout: layout,
                                               logger: logger)
            }
            #expect(try FileReader.prefix(path: path, limit: 100) == Array("theirs\n".utf8))
        }
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "no temporary left beside the name")
    }

    /// A daemon paused past its lease after its look at the claim finds the name missing
    /// because the taker published the work: not proven its own before the naming, the name
    /// is not given; proven lost after, it is taken back; no temporary stays either way.
    @Test(arguments: [false, true]) func aNameIsNotGivenBackOnceTheClaimIsLost(lostAfter: Bool) throws {
        defer { removeSpool() }
        let path = layout.incoming + "/e.jsonl.partial"
        let file = try held(path, "committed\n")
        try Syscall.unlinkIfPresent(path)
        #expect(throws: HeldFile.ClaimLostDuringTakeover.self) {
            _ = try HeldFile.giveNameAgain(from: file.rawValue, to: path, flags: O_RDWR | O_APPEND, replacing: false, layout: layout,
                                           logger: logger, stillMine: { lostAfter }, provenLost: { lostAfter })
        }
        #expect(!Syscall.isPresent(path), "the name stays free")
        #expect(try Syscall.listDirectoryRaw(layout.incoming).isEmpty, "no temporary left")
    }

    /// A claim that cannot be confirmed once the name is given (an unreadable lease) proves
    /// no loss: the name, the work's only one, stays.
    @Test func aNameGivenBackStaysWhenTheClaimIsOnlyUnconfirmed() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/u.jsonl.partial"
        let file = try held(path, "committed\n")
        try Syscall.unlinkIfPresent(path)
        let copy = try HeldFile.giveNameAgain(from: file.rawValue, to: path, flags: O_RDWR | O_APPEND, replacing: false, layout: layout,
                                              logger: logger, stillMine: { true }, provenLost: { false })
        #expect(try HeldFile.name(copy.rawValue, path: path) == .held)
        #expect(try FileReader.prefix(path: path, limit: 100) == Array("committed\n".utf8))
    }

    /// Taken back only while the name still leads to the copy: a file another daemon put
    /// there meanwhile stays.
    @Test func aNameTakenBackLeavesAnotherFileUnderIt() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/f.jsonl.partial"
        let file = try held(path, "committed\n")
        try Syscall.unlinkIfPresent(path)
        #expect(throws: HeldFile.ClaimLostDuringTakeover.self) {
            _ = try HeldFile.giveNameAgain(from: file.rawValue, to: path, flags: O_RDWR | O_APPEND, replacing: false, layout: layout,
                                           logger: logger, stillMine: { true }, provenLost: {
                                               // The taker's file under the name, put there after the copy was named.
                                               try? Syscall.unlink(path)
                                               try? DurableFile.write(Array("theirs\n".utf8), to: path, syncDirectory: false)
                                               return true
                                           })
        }
        #expect(try FileReader.prefix(path: path, limit: 100) == Array("theirs\n".utf8))
    }

    /// A daemon paused past its lease still holds the output open; once it is taken over,
    /// what it writes reaches no file a name leads to, and the copy holds the committed
    /// prefix alone.
    @Test func aFileTakenOverLeavesItsOldWriterWritingToNoName() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/d.jsonl.partial"
        let paused = try held(path, "committed\nnot committed\n")
        let taken = try HeldFile.takeOver(path, length: 10, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: { true })
        try paused.writeAll(Array("woken\n".utf8))
        try taken.writeAll(Array("resumed\n".utf8))
        #expect(try FileReader.prefix(path: path, limit: 100) == Array("committed\nresumed\n".utf8))
        #expect(try HeldFile.name(paused.rawValue, path: path) == .another)
        #expect(try HeldFile.name(taken.rawValue, path: path) == .held)
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "no temporary left")
    }

    @Test func aFileShorterThanItsCommittedLengthIsNotTakenOver() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/e.jsonl.partial"
        let file = try held(path, "short\n")
        #expect(throws: HeldFile.ShorterThanCommitted.self) {
            _ = try HeldFile.takeOver(path, length: 100, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: { true })
        }
        #expect(try HeldFile.name(file.rawValue, path: path) == .held, "the file under the name is left as it was")
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "no temporary left")
    }

    /// Nothing is written when the filesystem cannot hold the copy: a copy cut short by a
    /// full disk would fill it at every try.
    @Test func aTakeoverTheDiskHasNoRoomForWritesNothing() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/g.jsonl.partial"
        let file = try held(path, "committed\n")
        #expect(throws: HeldFile.NoRoomToTakeOver.self) {
            _ = try HeldFile.takeOver(path, length: Int.max / 2, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: { true })
        }
        #expect(try HeldFile.name(file.rawValue, path: path) == .held)
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "no temporary made")
    }

    /// A stop interrupts a long copy; the name keeps its file and no temporary is left.
    @Test func aTakeoverInterruptedLeavesTheNameAlone() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/h.jsonl.partial"
        let file = try held(path, String(repeating: "line\n", count: 100_000))
        struct Stopping: Error {}
        var chunks = 0
        #expect(throws: Stopping.self) {
            _ = try HeldFile.takeOver(path, length: 500_000, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: { true }, interrupt: {
                chunks += 1
                if chunks == 3 { throw Stopping() }
            })
        }
        #expect(chunks == 3)
        #expect(try HeldFile.name(file.rawValue, path: path) == .held)
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "no temporary left")
    }

    /// A copy that outlasted the claim is not put under the name: the new holder's files
    /// may be there by now.
    @Test func aTakeoverWhoseClaimWasLostMeanwhileLeavesTheNameAlone() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/f.jsonl.partial"
        let file = try held(path, "committed\n")
        #expect(throws: HeldFile.ClaimLostDuringTakeover.self) {
            _ = try HeldFile.takeOver(path, length: 10, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: { false })
        }
        #expect(try HeldFile.name(file.rawValue, path: path) == .held)
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "no temporary left")
    }

    /// A taker paused between its look at the claim and its rename, the file replaced
    /// meanwhile by the daemon that took the claim back (its own copy, with more committed):
    /// the stale copy is not put over it.
    @Test func aTakeoverDoesNotReplaceAFileThatChangedWhileItWasCopied() throws {
        defer { removeSpool() }
        let path = layout.incoming + "/g.jsonl.partial"
        _ = try held(path, "committed\n")
        #expect(throws: HeldFile.NameChangedDuringTakeover.self) {
            _ = try HeldFile.takeOver(path, length: 10, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: {
                try? Syscall.unlink(path)
                try? DurableFile.write(Array("committed\nmore\n".utf8), to: path, syncDirectory: false)
                return true
            })
        }
        #expect(try FileReader.prefix(path: path, limit: 100) == Array("committed\nmore\n".utf8))
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == 1, "no temporary left")
    }

    /// The claim proven lost between the look and the rename: the copy named is taken back.
    /// Only unconfirmed (an unreadable lease), the copy, now the name's only file, stays.
    @Test(arguments: [true, false]) func aTakeoverWhoseClaimIsLostAsItRenamesTakesTheNameBack(proven: Bool) throws {
        defer { removeSpool() }
        let path = layout.incoming + "/h.jsonl.partial"
        _ = try held(path, "committed\n")
        if proven {
            #expect(throws: HeldFile.ClaimLostDuringTakeover.self) {
                _ = try HeldFile.takeOver(path, length: 10, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: { true }, provenLost: { true })
            }
            #expect(!Syscall.isPresent(path), "the copy is not left under the name")
        } else {
            let copy = try HeldFile.takeOver(path, length: 10, flags: O_RDWR | O_APPEND, mode: 0o600, stillMine: { true }, provenLost: { false })
            #expect(try HeldFile.name(copy.rawValue, path: path) == .held)
            #expect(try FileReader.prefix(path: path, limit: 100) == Array("committed\n".utf8))
        }
        #expect(try Syscall.listDirectoryRaw(layout.incoming).count == (proven ? 0 : 1), "no temporary left")
    }
}
