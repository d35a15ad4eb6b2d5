import Glibc
import Testing
@testable import LLMSpoolCore

/// The publication's file operations as the daemon runs them.
@Suite struct SpoolFilesTests {
    let path = "/tmp/llmspool-sync-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).partial"

    /// The fsync goes through the descriptor that wrote the file: no open by name, so it
    /// works even when the name no longer leads to the file.
    @Test func aHeldFileIsSyncedThroughItsDescriptor() throws {
        let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL)
        try file.writeAll(Array("answer".utf8))
        try Syscall.unlink(path)
        let files = SpoolFiles(layout: SpoolLayout(root: "/tmp"), heldOpen: [path: file.rawValue])
        try files.syncFile(path)
    }

    @Test func aFileNobodyHoldsIsOpenedByName() throws {
        let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL)
        try file.writeAll(Array("answer".utf8))
        let files = SpoolFiles(layout: SpoolLayout(root: "/tmp"))
        try files.syncFile(path)
        try Syscall.unlink(path)
        let error = #expect(throws: SystemError.self) { try files.syncFile(path) }
        #expect(error?.errno == ENOENT)
        #expect(error?.path == path)
    }
}

/// Only the unlink can say whether a file was still there: a lookup before it may be
/// answered from a network mount's stale cache.
@Suite struct SpoolFilesUnlinkTests {
    @Test func theUnlinkSaysWhetherItRemovedTheFile() throws {
        let path = "/tmp/llmspool-unlink-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL)
        try file.close()
        let files = SpoolFiles(layout: SpoolLayout(root: "/tmp"))
        #expect(try files.unlinkIfPresent(path))
        #expect(try !files.unlinkIfPresent(path), "gone already")
    }
}

/// The same for a move to `failed/`: `ENOENT` is taken for a source already gone only while
/// the destination's folder is there.
@Suite struct SpoolFilesRenameTests {
    let folder = "/tmp/llmspool-rename-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    @Test func theRenameSaysWhetherTheSourceWasThere() throws {
        try Syscall.mkdir(folder, mode: 0o700)
        defer { rmdir(folder) }
        let source = folder + ".request"
        try FileDescriptor.open(source, O_WRONLY | O_CREAT | O_EXCL).close()
        let files = SpoolFiles(layout: SpoolLayout(root: "/tmp"))
        #expect(try files.renameIfPresent(source, folder + "/moved"))
        #expect(try !files.renameIfPresent(source, folder + "/moved"), "gone already")
        try Syscall.unlink(folder + "/moved")
    }

    @Test func aMissingDestinationFolderIsAnError() throws {
        let source = folder + ".request"
        try FileDescriptor.open(source, O_WRONLY | O_CREAT | O_EXCL).close()
        defer { unlink(source) }
        let files = SpoolFiles(layout: SpoolLayout(root: "/tmp"))
        let error = #expect(throws: SystemError.self) { try files.renameIfPresent(source, folder + "/moved") }
        #expect(error?.errno == ENOENT)
        #expect(try Syscall.exists(source), "the request stays where it was")
    }
}
