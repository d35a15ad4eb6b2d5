import Foundation
import Glibc
@testable import LLMSpoolCore
import LLMSpoolModel
import LLMSpoolSystem
import Testing

/// A root found at another place than the pin's: followed only when it is this spool (by its
/// id, read through real folders) and only once the pin's owner takes it; held otherwise.
@Suite struct SpoolRootFollowTests {
    let base = NSTemporaryDirectory() + "llmspool-follow-\(UUID().uuidString)"
    let logger = Logger(minimum: .error)

    private func run(_ program: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SystemError(errno: EIO, call: program, path: arguments.joined(separator: " ")) }
    }

    private func made() throws -> (SpoolLayout, SharedRootPin) {
        try Syscall.mkdir(base, mode: 0o700)
        let unpinned = SpoolLayout(root: base + "/spool")
        try unpinned.create()
        let layout = try unpinned.pinnedNow(spoolID: try SpoolIDFile.readOrMake(unpinned, logger: logger))
        return (layout, try #require(layout.rootPin as? SharedRootPin))
    }

    /// The spool moved aside to `<root>.old`, and a new folder with the spool's folders made under its name.
    private func putANewFolderInItsPlace(_ layout: SpoolLayout) throws {
        #expect(rename(layout.root, layout.root + ".old") == 0)
        try SpoolLayout(root: layout.root).create()
    }

    /// The spool put back as a copy of itself (restored, or the same share mounted again):
    /// proposed, held until taken, then trusted at its new place.
    @Test func theSameSpoolAtANewPlaceIsProposedThenFollowed() throws {
        let (layout, pin) = try made()
        defer { try? Syscall.removeTree(base) }
        #expect(rename(layout.root, layout.root + ".old") == 0)
        try run("/bin/cp", ["-a", layout.root + ".old", layout.root])
        let problem = layout.integrityProblem(of: [layout.incoming])
        #expect(problem?.contains("mounted again") == true, "\(problem ?? "nil")")
        let now = try Syscall.statFollowingLinks(layout.root)
        let place = SpoolRootIdentity.Place(device: UInt64(now.st_dev), inode: UInt64(now.st_ino))
        #expect(pin.proposed == place)
        #expect(layout.integrityProblem() != nil, "held until the owner has taken it")
        pin.move(to: place)
        #expect(layout.integrityProblem() == nil)
        #expect(pin.moves == 1)
        #expect(pin.proposed == nil)
    }

    /// The root swapped for a link to a copy of the spool (same filesystem, same id): not a
    /// share mounted again, which is never a link; it was followed, and answers written there.
    @Test func aRootSwappedForALinkToACopyIsNotFollowed() throws {
        let (layout, pin) = try made()
        defer { try? Syscall.removeTree(base) }
        try run("/bin/cp", ["-a", layout.root, base + "/copy"])
        #expect(rename(layout.root, layout.root + ".old") == 0)
        #expect(symlink(base + "/copy", layout.root) == 0)
        let problem = layout.integrityProblem(of: [layout.incoming])
        #expect(problem?.contains("the root is a symbolic link now, which it was not at start") == true, "\(problem ?? "nil")")
        #expect(pin.proposed == nil)
    }

    /// A spool configured through a link keeps following it: the link is the configuration.
    @Test func aRootConfiguredThroughALinkIsMovedLikeAFolder() throws {
        try Syscall.mkdir(base, mode: 0o700)
        defer { try? Syscall.removeTree(base) }
        let real = SpoolLayout(root: base + "/real")
        try real.create()
        #expect(symlink(base + "/real", base + "/spool") == 0)
        let unpinned = SpoolLayout(root: base + "/spool")
        let layout = try unpinned.pinnedNow(spoolID: try SpoolIDFile.readOrMake(unpinned, logger: logger))
        let pin = try #require(layout.rootPin as? SharedRootPin)
        #expect(pin.identity.reachedThroughLink)
        #expect(layout.integrityProblem() == nil)
        // The link pointed at a copy (a restore): the same spool, proposed as before.
        #expect(rename(base + "/real", base + "/real.old") == 0)
        try run("/bin/cp", ["-a", base + "/real.old", base + "/real"])
        #expect(layout.integrityProblem(of: [layout.incoming])?.contains("mounted again") == true)
    }

    /// A new folder whose `state` leads to the real spool's: its id is the spool's, read
    /// through the link, but the folders are looked at first.
    @Test func aFolderWhoseStateIsALinkToTheSpoolsIsNotTheSpool() throws {
        let (layout, pin) = try made()
        defer { try? Syscall.removeTree(base) }
        try putANewFolderInItsPlace(layout)
        try Syscall.removeTree(layout.state)
        #expect(symlink(layout.root + ".old/state", layout.state) == 0)
        let problem = layout.integrityProblem(of: [layout.incoming])
        #expect(problem?.contains("is not the folder the daemon started with (its folders are not the spool's)") == true, "\(problem ?? "nil")")
        #expect(pin.proposed == nil)
    }

    @Test func anotherSpoolIsHeldAndSaysWhy() throws {
        let (layout, pin) = try made()
        defer { try? Syscall.removeTree(base) }
        try putANewFolderInItsPlace(layout)
        let problem = layout.integrityProblem()
        #expect(problem?.contains("it has no state/.spool-id") == true, "\(problem ?? "nil")")
        _ = try SpoolIDFile.readOrMake(SpoolLayout(root: layout.root), logger: logger)
        #expect(layout.integrityProblem()?.contains("another spool's") == true)
        #expect(pin.proposed == nil)
    }

    /// The commonest impostor: the disk under an unmounted share, holding a copy of the
    /// spool (an rsync made before the share was mounted over it).
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aCopyOnTheDiskUnderTheShareIsNotTheSpool() throws {
        try Syscall.mkdir(base, mode: 0o700)
        let root = base + "/spool"
        try Syscall.mkdir(root, mode: 0o700)
        try SpoolLayout(root: root).create()
        _ = try SpoolIDFile.readOrMake(SpoolLayout(root: root), logger: logger)
        try Syscall.mkdir(base + "/copy", mode: 0o700)
        try run("/bin/cp", ["-a", root + "/.", base + "/copy/"])
        try run("/bin/mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", root])
        defer { _ = try? run("/bin/umount", ["-l", root]); try? Syscall.removeTree(base) }
        try run("/bin/cp", ["-a", base + "/copy/.", root + "/"])
        let unpinned = SpoolLayout(root: root)
        let layout = try unpinned.pinnedNow(spoolID: try SpoolIDFile.readOrMake(unpinned, logger: logger))
        try run("/bin/umount", [root])
        let problem = layout.integrityProblem()
        #expect(problem?.contains("another kind of filesystem") == true, "\(problem ?? "nil")")
        #expect((layout.rootPin as? SharedRootPin)?.proposed == nil)
    }
}
