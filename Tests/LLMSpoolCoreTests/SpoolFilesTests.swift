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

    /// A folder put at an answer's or a batch output's name just before its publication's
    /// rename is moved there instead of the file: the step moves it back and fails. Before,
    /// the folder stood as the published output and the summary said `completed`.
    @Test func aFolderMovedByThePublicationsRenameIsMovedBack() throws {
        let files = SpoolFiles(layout: SpoolLayout(root: "/tmp"))
        let published = path + ".published"
        try Syscall.mkdir(path, mode: 0o755)
        defer {
            _ = try? Syscall.removeTree(path)
            _ = try? Syscall.removeTree(published)
        }
        let error = #expect(throws: HeldFile.FolderInTheWay.self) { try files.rename(path, published) }
        #expect(error?.path == path)
        #expect(try Syscall.lstat(path).st_mode & S_IFMT == S_IFDIR, "the folder is back where it was put")
        #expect(!Syscall.isPresent(published), "nothing is published")
        // A file goes through as before.
        try Syscall.removeTree(path)
        try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL).writeAll(Array("answer".utf8))
        try files.rename(path, published)
        #expect(Syscall.isRegularFile(published) && !Syscall.isPresent(path))
    }

    /// A durable write whose rename is refused (a folder at the name) leaves no temporary
    /// beside it: before, `.<name>.tmp` stayed next to the folder after every try.
    @Test func aWriteRefusedByAFolderAtItsNameLeavesNoTemporary() throws {
        try Syscall.mkdir(path, mode: 0o755)
        defer { _ = try? Syscall.removeTree(path) }
        let error = #expect(throws: SystemError.self) { try DurableFile.write(Array("summary".utf8), to: path) }
        #expect(error?.errno == EISDIR)
        #expect(!Syscall.isPresent(SpoolLayout.temporary(for: path)))
    }

    /// The errors file is read from the output a piece at a time: lines that cross a read's
    /// end, a failed line longer than a read, and a last line without its newline are each
    /// taken whole, and only the failed ones, in order.
    @Test func theFailedLinesOfAnOutputAreFoundAcrossItsReads() throws {
        func line(_ id: String, failed: Bool, padding: Int) -> String {
            let pad = String(repeating: "x", count: padding)
            return failed ? #"{"custom_id":"\#(id)","pad":"\#(pad)","error":{"code":"http","message":"m"}}"#
                          : #"{"custom_id":"\#(id)","pad":"\#(pad)","error":null}"#
        }
        let mib = 1 << 20
        #expect(mib % FileReader.chunkSize == 0, "a MiB is a whole number of reads")
        let lines = [line("a", failed: false, padding: mib - 60),  // ends just before a read's end
                     line("b", failed: true, padding: 100),          // crosses it
                     line("c", failed: true, padding: 2 * mib),      // longer than a read
                     line("d", failed: false, padding: 10),
                     line("e", failed: true, padding: 10),
                     line("f", failed: true, padding: 10)]            // no newline after it
        let output = path + ".output"
        let errors = path + ".errors"
        defer {
            try? Syscall.unlinkIfPresent(output)
            try? Syscall.unlinkIfPresent(errors)
        }
        try DurableFile.write(Array(lines.joined(separator: "\n").utf8), to: output, syncDirectory: false)
        try SpoolFiles(layout: SpoolLayout(root: "/tmp")).writeFailedLines(of: output, to: errors)
        let written = String(decoding: try FileReader.prefix(path: errors, limit: 8 * mib), as: UTF8.self)
        #expect(written == [lines[1], lines[2], lines[4], lines[5]].map { $0 + "\n" }.joined())
    }

    /// An output already gone when the end is run again (published, then taken by its
    /// consumer, before a crashed end was finished): the step does nothing, and the end goes
    /// on; an errors file there is the consumer's. Before, the step failed at every start
    /// and the batch never ended.
    @Test func anOutputAlreadyGoneLeavesTheErrorsFileAsItIs() throws {
        let errors = path + ".errors"
        defer { try? Syscall.unlinkIfPresent(errors) }
        let files = SpoolFiles(layout: SpoolLayout(root: "/tmp"))
        try files.writeFailedLines(of: path + ".gone", to: errors)
        #expect(!Syscall.isPresent(errors))
        try DurableFile.write(Array("taken\n".utf8), to: errors, syncDirectory: false)
        try files.writeFailedLines(of: path + ".gone", to: errors)
        #expect(String(decoding: try FileReader.prefix(path: errors, limit: 100), as: UTF8.self) == "taken\n")
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
