import Foundation
import Glibc
@testable import LLMSpoolCore
import LLMSpoolModel
import LLMSpoolSystem
import Testing

/// On a shared spool a producer's file is read afresh before it is moved or removed: its
/// content, not only its attributes, must still be the one read at intake.
@Suite struct FreshIdentityTests {
    let folder: String
    let layout: SpoolLayout

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("fresh-identity-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        layout = SpoolLayout(root: folder)
    }

    func intake(_ path: String) throws -> FileIdentity {
        guard case .success(let loaded)? = RequestFile.read(path: path, limit: 1 << 20) else { throw SystemError(errno: EIO, call: "read", path: path) }
        return loaded.identity
    }

    /// Saved again in place, same size, its old times put back: what a stale attribute
    /// cache shows. Only the content tells, and only a shared spool reads it.
    func savedAgainUnderTheSameAttributes(_ path: String) throws {
        let before = try Syscall.lstat(path)
        let file = try FileDescriptor.open(path, O_WRONLY | O_NOFOLLOW)
        try file.writeAll(Array(#"{"a": "new"}"#.utf8))
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(file.rawValue, &times) == 0)
    }

    @Test func contentChangedUnderTheSameAttributesIsKeptOnASharedSpool() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/r.json"
        try Data(#"{"a": "old"}"#.utf8).write(to: URL(fileURLWithPath: path))
        let read = try intake(path)
        try savedAgainUnderTheSameAttributes(path)
        #expect(try SpoolFiles(layout: layout, shared: true).unlinkIfSame(path, read) == .replacedByNewer)
        #expect(Syscall.isPresent(path), "the newer save stays")
        #expect(try SpoolFiles(layout: layout, shared: true).renameIfSame(path, folder + "/moved.json", read) == .replacedByNewer)
        #expect(try SpoolFiles(layout: layout).unlinkIfSame(path, read) == .done, "a local spool trusts the attributes")
        #expect(!Syscall.isPresent(path))
    }

    @Test func theFileReadAtIntakeIsRemovedOrMovedOnASharedSpool() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let shared = SpoolFiles(layout: layout, shared: true)
        let path = folder + "/r.json"
        try Data(#"{"a": 1}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(try shared.renameIfSame(path, folder + "/moved.json", try intake(path)) == .done)
        #expect(!Syscall.isPresent(path) && Syscall.isPresent(folder + "/moved.json"))
        let moved = folder + "/moved.json"
        #expect(try shared.unlinkIfSame(moved, try intake(moved)) == .done)
        #expect(!Syscall.isPresent(moved))
    }

    @Test func aLinkOrAFolderInItsPlaceIsAnotherFileAndAFileGoneIsNone() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/r.json"
        try Data(#"{"a": 1}"#.utf8).write(to: URL(fileURLWithPath: path))
        let read = try intake(path)
        let shared = SpoolFiles(layout: layout, shared: true)
        try Syscall.unlinkIfPresent(path)
        #expect(try shared.unlinkIfSame(path, read) == .alreadyGone)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: folder + "/elsewhere")
        #expect(try shared.unlinkIfSame(path, read) == .replacedByNewer, "a dangling link, not followed")
        try Syscall.unlinkIfPresent(path)
        try Syscall.mkdir(path, mode: 0o700)
        #expect(try shared.unlinkIfSame(path, read) == .replacedByNewer)
        #expect(Syscall.isPresent(path))
    }
}
