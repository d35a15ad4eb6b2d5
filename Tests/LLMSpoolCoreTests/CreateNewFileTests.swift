import Glibc
import Testing
@testable import LLMSpoolCore

/// `FileDescriptor.createNew`: always a new file, never an old one truncated, with the
/// mode asked for, whether or not a file of that name was there.
@Suite struct CreateNewFileTests {
    let folder: String

    init() throws {
        folder = "/tmp/llmspool-create-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Syscall.mkdir(folder, mode: 0o700)
    }

    func removeFolder() {
        for name in (try? Syscall.listDirectoryRaw(folder)) ?? [] {
            let path = folder + "/" + String(decoding: name, as: UTF8.self)
            if unlink(path) != 0 { rmdir(path) }
        }
        rmdir(folder)
    }

    @Test func aFreeNameGetsAFileWithTheModeAskedFor() throws {
        defer { removeFolder() }
        let path = folder + "/new.partial"
        let file = try FileDescriptor.createNew(path, O_WRONLY | O_NOFOLLOW, mode: 0o640)
        try file.writeAll(Array("abc".utf8))
        let info = try file.fstat()
        try file.close()
        #expect(info.st_mode & 0o777 == 0o640)
        #expect(try FileReader.prefix(path: path, limit: 100) == Array("abc".utf8))
    }

    @Test func aFileOfThatNameIsReplacedByANewOneAndKeepsItsContent() throws {
        defer { removeFolder() }
        let path = folder + "/taken.partial"
        // The old file, still open as a daemon that lost the request would hold it.
        let old = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        try old.writeAll(Array("old answer".utf8))
        let oldInode = try old.fstat().st_ino
        let file = try FileDescriptor.createNew(path, O_WRONLY | O_NOFOLLOW, mode: 0o600)
        let newInode = try file.fstat().st_ino
        try file.writeAll(Array("new".utf8))
        try file.close()
        #expect(newInode != oldInode)
        #expect(try FileReader.prefix(path: path, limit: 100) == Array("new".utf8))
        // The old inode was not truncated: its writer's bytes are still there.
        #expect(try old.fstat().st_size == 10)
        try old.close()
    }

    @Test func aSymbolicLinkOfThatNameIsReplacedNotFollowed() throws {
        defer { removeFolder() }
        let target = folder + "/target"
        try DurableFile.write(Array("keep".utf8), to: target, syncDirectory: false)
        let path = folder + "/link.partial"
        #expect(symlink(target, path) == 0)
        let file = try FileDescriptor.createNew(path, O_WRONLY | O_NOFOLLOW, mode: 0o600)
        try file.writeAll(Array("x".utf8))
        try file.close()
        #expect(try FileReader.prefix(path: target, limit: 100) == Array("keep".utf8))
        #expect(try Syscall.lstat(path).st_mode & S_IFMT == S_IFREG)
    }

    @Test func aFolderOfThatNameIsAnErrorNamingThePath() throws {
        defer { removeFolder() }
        let path = folder + "/sub"
        try Syscall.mkdir(path, mode: 0o700)
        #expect {
            _ = try FileDescriptor.createNew(path, O_WRONLY | O_NOFOLLOW, mode: 0o600)
        } throws: { error in
            (error as? SystemError)?.path == path && "\(error)".contains(path)
        }
    }
}
