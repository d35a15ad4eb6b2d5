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

    // Another mount of the same share: its own device and inode numbers, the time to the second.
    static let history = TaskHistory(firstSeen: .init(timeIntervalSince1970: 0))
    let elsewhere = FileIdentity(device: 9, inode: 3, size: 10, modifiedNanoseconds: 5_000_000_000, contentHash: 0xabc)
    let here = FileIdentity(device: 1, inode: 7, size: 10, modifiedNanoseconds: 5_123_456_789, contentHash: 0xabc)

    @Test func throughAnotherMountSizeTimeToTheSecondAndFingerprintTell() {
        #expect(here.isSameInstanceAcrossMounts(as: elsewhere))
        #expect(!here.isSameInstance(as: elsewhere))
        let edited = FileIdentity(device: 9, inode: 3, size: 10, modifiedNanoseconds: 5_000_000_000, contentHash: 0xdef)
        #expect(!here.isSameInstanceAcrossMounts(as: edited))
        let later = FileIdentity(device: 9, inode: 3, size: 10, modifiedNanoseconds: 6_000_000_000, contentHash: 0xabc)
        #expect(!here.isSameInstanceAcrossMounts(as: later))
        let unread = FileIdentity(device: 9, inode: 3, size: 10, modifiedNanoseconds: 5_000_000_000)
        #expect(!here.isSameInstanceAcrossMounts(as: unread), "without a fingerprint nothing is proven")
        let reborn = here.with(bornNanoseconds: 1)
        #expect(!reborn.isSameInstanceAcrossMounts(as: elsewhere.with(bornNanoseconds: 2)))
    }

    @Test func aDoneRecordFromAnotherMountEndsTheRequestWhenItsResultIsNewer() {
        var record = TaskRecord(id: "q", status: .done, request: elsewhere, history: Self.history)
        record.resultInode = 44  // that mount's number: not comparable here
        #expect(Recovery.decide(record: record, identity: here, resultInode: 12, resultModifiedNanoseconds: 7_000_000_000) == .alreadyEnded)
        #expect(Recovery.decide(record: record, identity: here, resultInode: 12, resultModifiedNanoseconds: 5_900_000_000) == .alreadyEnded,
                "written within the request's second")
        #expect(Recovery.decide(record: record, identity: here, resultInode: 12, resultModifiedNanoseconds: 4_000_000_000) == .fresh,
                "a result older than the request is an earlier task's")
        #expect(Recovery.decide(record: record, identity: here, resultInode: nil, resultModifiedNanoseconds: nil) == .fresh, "no result")
        record.resultInode = nil
        #expect(Recovery.decide(record: record, identity: here, resultInode: 12, resultModifiedNanoseconds: 7_000_000_000) == .fresh,
                "a done record that never named its result proves nothing")
    }

    @Test func failedAndActiveRecordsFromAnotherMountStand() {
        #expect(Recovery.decide(record: TaskRecord(id: "q", status: .failed, request: elsewhere, history: Self.history),
                                identity: here, resultInode: nil) == .alreadyEnded)
        #expect(Recovery.decide(record: TaskRecord(id: "q", status: .active, request: elsewhere, history: Self.history),
                                identity: here, resultInode: nil) == .resume(Self.history))
        let other = FileIdentity(device: 9, inode: 3, size: 11, modifiedNanoseconds: 5_000_000_000, contentHash: 0xabc)
        #expect(Recovery.decide(record: TaskRecord(id: "q", status: .failed, request: other, history: Self.history),
                                identity: here, resultInode: nil) == .fresh)
    }
}
