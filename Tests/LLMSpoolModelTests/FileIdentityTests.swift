import Testing
@testable import LLMSpoolModel

/// Which file a record speaks of: a recycled inode is not the file that was read.
@Suite struct FileIdentityTests {
    let read = FileIdentity(device: 1, inode: 7, size: 10, modifiedNanoseconds: 5, bornNanoseconds: 100, contentHash: 0xabc)

    @Test func aRecycledInodeWithTheSameSizeAndTimeIsAnotherFile() {
        // `cp -p` of the same request: same size and mtime, the inode the old one freed.
        let redropped = FileIdentity(device: 1, inode: 7, size: 10, modifiedNanoseconds: 5, bornNanoseconds: 200, contentHash: 0xabc)
        #expect(!read.isSameInstance(as: redropped))
        #expect(Recovery.decide(record: TaskRecord(id: "q", status: .failed, request: read, history: TaskHistory(firstSeen: .init(timeIntervalSince1970: 0))),
                                identity: redropped, resultInode: nil) == .fresh)
    }

    @Test func otherContentOnTheSameInodeIsAnotherFile() {
        let edited = FileIdentity(device: 1, inode: 7, size: 10, modifiedNanoseconds: 5, bornNanoseconds: 100, contentHash: 0xdef)
        #expect(!read.isSameInstance(as: edited))
    }

    @Test func whatOneSideDoesNotKnowIsNotHeldAgainstIt() {
        // lstat gives no fingerprint; FUSE gives no birth time; older records have neither.
        let looked = FileIdentity(device: 1, inode: 7, size: 10, modifiedNanoseconds: 5)
        #expect(read.isSameInstance(as: looked))
        #expect(looked.isSameInstance(as: read))
        #expect(read.isSameInstance(as: read.with(bornNanoseconds: nil)))
    }

    @Test(arguments: [(2, 7, 10, 5), (1, 8, 10, 5), (1, 7, 11, 5), (1, 7, 10, 6)])
    func deviceInodeSizeAndTimeMustAllAgree(device: UInt64, inode: UInt64, size: Int64, modified: Int64) {
        #expect(!read.isSameInstance(as: FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modified)))
    }
}
