import Glibc
import Testing
@testable import LLMSpoolCore

/// `FileDescriptor` closes its number exactly once, seen from the kernel's side in
/// /proc/self/fd. The numbers are moved above 900 so that the tests running beside
/// these, which get the lowest free numbers, never reuse one meanwhile; serialized, so that
/// these do not take each other's.
@Suite(.serialized) struct FileDescriptorTests {
    let path: String

    init() throws {
        path = "/tmp/llmspool-fd-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try DurableFile.write(Array("x".utf8), to: path, syncDirectory: false)
    }

    /// A descriptor on `path` at a number of 900 or more.
    func openHigh() throws -> Int32 {
        let low = try Syscall.open(path, O_RDONLY)
        defer { Syscall.close(low) }
        let high = fcntl(low, F_DUPFD_CLOEXEC, 900)
        try #require(high >= 900)
        return high
    }

    /// What /proc/self/fd says `fd` is open on; nil when it is not open.
    func target(_ fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test func theEndOfItsScopeClosesIt() throws {
        defer { unlink(path) }
        let number: Int32
        do {
            let file = FileDescriptor(owning: try openHigh(), path: path)
            number = file.rawValue
            #expect(target(number) == path)
        }
        #expect(target(number) == nil)
    }

    @Test func closeClosesOnceAndTheScopeDoesNotCloseAgain() throws {
        defer { unlink(path) }
        let number = try openHigh()
        let file = FileDescriptor(owning: number, path: path)
        try file.close()
        #expect(target(number) == nil)
        // The number is someone else's now: nothing of `file` may touch it.
        let other = try openHigh()
        #expect(other == number)
        #expect(target(number) == path)
        Syscall.close(other)
    }

    @Test func releaseHandsTheNumberOverOpen() throws {
        defer { unlink(path) }
        let number: Int32
        do {
            let file = FileDescriptor(owning: try openHigh(), path: path)
            number = file.release()
        }
        #expect(target(number) == path)
        Syscall.close(number)
        #expect(target(number) == nil)
    }

    @Test func aFailedCloseIsReportedWithTheCallAndThePath() throws {
        defer { unlink(path) }
        let number = try openHigh()
        Syscall.close(number)
        let file = FileDescriptor(owning: number, path: "/the/file")
        var reported: SystemError?
        do {
            try file.close()
        } catch let error as SystemError {
            reported = error
        }
        #expect(reported == SystemError(errno: EBADF, call: "close", path: "/the/file"))
    }

    @Test func anOwnerGivesItsDescriptorOnceAndTheTakerClosesIt() throws {
        defer { unlink(path) }
        let owner = DescriptorOwner(FileDescriptor(owning: try openHigh(), path: path))
        #expect(owner.isHeld)
        #expect(owner.path == path)
        let number: Int32
        do {
            guard let taken = owner.take() else {
                Issue.record("the first take gets the descriptor")
                return
            }
            number = taken.rawValue
            #expect(owner.take()?.rawValue == nil, "a second take gets nothing")
            #expect(!owner.isHeld)
            #expect(target(number) == path, "taken, not closed")
        }
        #expect(target(number) == nil, "closed when the taker's scope ended")
    }

    @Test func anOwnerNobodyTookClosesWithItsLastReference() throws {
        defer { unlink(path) }
        let number = try openHigh()
        var owner: DescriptorOwner? = DescriptorOwner(FileDescriptor(owning: number, path: path))
        #expect(owner?.isHeld == true)
        #expect(target(number) == path)
        owner = nil
        #expect(target(number) == nil)
    }

    @Test func anOwnerReadsItsFileFromTheStartLeavingTheWritersOffset() throws {
        defer { unlink(path) }
        let file = try FileDescriptor.open(path, O_RDWR | O_APPEND)
        // More than one read's worth, so that the chunks join in order.
        let written = (0..<(FileReader.chunkSize + 100)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Syscall.writeAll(file.rawValue, written, path: path)
        let number = file.rawValue
        let owner = DescriptorOwner(file)
        #expect(try owner.readFromStart(limit: 3) == [UInt8(ascii: "x"), 0, 7])
        #expect(try owner.readFromStart(limit: .max) == [UInt8(ascii: "x")] + written)
        #expect(lseek(number, 0, SEEK_CUR) == off_t(1 + written.count), "the writer's offset stays at the end")
        owner.discard()
        #expect(try owner.readFromStart(limit: 10) == nil, "nothing once the descriptor is gone")
    }

    @Test func discardClosesAtOnce() throws {
        defer { unlink(path) }
        let number = try openHigh()
        let owner = DescriptorOwner(FileDescriptor(owning: number, path: path))
        owner.discard()
        #expect(target(number) == nil)
        #expect(owner.take()?.rawValue == nil)
        owner.discard()
    }

    @Test func unlinkThenCloseRemovesTheFileAndClosesIt() throws {
        defer { unlink(path) }
        let number = try openHigh()
        try FileDescriptor(owning: number, path: path).unlinkThenClose(path)
        #expect(target(number) == nil)
        #expect(!Syscall.isPresent(path))
    }

    @Test func unlinkThenCloseTakesAMissingFileForRemoved() throws {
        let number = try openHigh()
        unlink(path)
        try FileDescriptor(owning: number, path: path).unlinkThenClose(path)
        #expect(target(number) == nil)
    }

    @Test func unlinkThenCloseClosesWhenTheUnlinkFailsAndReportsTheUnlink() throws {
        defer { unlink(path) }
        let number = try openHigh()
        let folder = path + ".folder"
        try Syscall.mkdir(folder, mode: 0o700)
        defer { rmdir(folder) }
        var reported: SystemError?
        do {
            try FileDescriptor(owning: number, path: path).unlinkThenClose(folder)
        } catch let error as SystemError {
            reported = error
        }
        #expect(reported?.call == "unlink" && reported?.errno == EISDIR, "\(String(describing: reported))")
        #expect(target(number) == nil, "closed all the same")
    }
}
