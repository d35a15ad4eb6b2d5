import Testing
@testable import LLMSpoolModel

/// A batch's journal read by a daemon on another mount of a shared spool (another machine's
/// FUSE mount: its own device number; sshfs: its own inode numbers), which must resume it,
/// never take a replaced file for it.
@Suite struct BatchAcrossMountsTests {
    static let fingerprint = Fingerprint.hash(Array("{\"custom_id\":\"a\"}\n{\"custom_id\":\"b\"}\n".utf8))
    /// As the daemon that wrote the journal saw its input (GlusterFS: nanosecond times, no birth time).
    let written = FileIdentity(device: 51, inode: 9_871_234, size: 900, modifiedNanoseconds: 1_796_140_181_123_456_789,
                               contentHash: BatchAcrossMountsTests.fingerprint)

    func journal(lines: Int = 4, committed: [Int] = [0], input: FileIdentity? = nil) throws -> BatchJournal {
        var bytes = BatchJournal.encode(BatchJournal.Header(kind: .openai, lines: lines, createdAt: 1000, input: input ?? written,
                                                            endpoint: "/v1/chat/completions"))
        for (index, entry) in committed.enumerated() {
            bytes += BatchJournal.encode(BatchJournal.Entry(entry: entry, code: UInt8(ascii: "s"), outputEnd: 40 * (index + 1)))
        }
        return try #require(BatchJournal.replay(bytes))
    }

    /// The same file through another mount: another device, another inode (sshfs), the time
    /// to the second only (SFTP), the same content.
    var throughAnotherMount: FileIdentity {
        FileIdentity(device: 63, inode: 12, size: 900, modifiedNanoseconds: 1_796_140_181_000_000_000, contentHash: Self.fingerprint)
    }

    @Test func theJournalKeepsTheInputsFingerprint() throws {
        let replayed = try journal()
        #expect(replayed.header.input == written)
        #expect(replayed.header.input.contentHash == Self.fingerprint)
    }

    @Test func theSameFileThroughAnotherMountResumes() throws {
        let partial = try journal()
        #expect(BatchRecovery.journalNames(throughAnotherMount, recorded: written))
        #expect(BatchRecovery.decide(journal: partial, input: throughAnotherMount, partialLength: 40) == .resume(partial))
        // GlusterFS keeps the inode number across mounts; the device is each mount's own.
        let gluster = FileIdentity(device: 64, inode: written.inode, size: 900, modifiedNanoseconds: written.modifiedNanoseconds,
                                   contentHash: Self.fingerprint)
        #expect(BatchRecovery.decide(journal: partial, input: gluster, partialLength: 40) == .resume(partial))
    }

    @Test func aJournalWhoseLinesAreAllCommittedIsPublishedFromAnotherMount() throws {
        let all = try journal(lines: 1)
        #expect(BatchRecovery.decide(journal: all, input: throughAnotherMount, partialLength: 40) == .publish(all, outputPublished: false))
        #expect(BatchRecovery.decide(journal: all, input: throughAnotherMount, partialLength: nil) == .publish(all, outputPublished: true))
    }

    /// Two machines hand out device numbers alone: their mounts can have the same one, and
    /// sshfs's inode numbers still differ.
    @Test func anotherMachinesMountWithTheSameDeviceNumberResumes() throws {
        let sameDevice = FileIdentity(device: written.device, inode: 12, size: 900, modifiedNanoseconds: 1_796_140_181_000_000_000,
                                      contentHash: Self.fingerprint)
        #expect(BatchRecovery.decide(journal: try journal(), input: sameDevice, partialLength: 40) == .resume(try journal()))
    }

    @Test(arguments: [
        // Other content under the name (another batch dropped as a replacement).
        FileIdentity(device: 63, inode: 12, size: 900, modifiedNanoseconds: 1_796_140_181_000_000_000, contentHash: 0x1234),
        // Other size.
        FileIdentity(device: 63, inode: 12, size: 901, modifiedNanoseconds: 1_796_140_181_000_000_000, contentHash: BatchAcrossMountsTests.fingerprint),
        // Written in another second.
        FileIdentity(device: 63, inode: 12, size: 900, modifiedNanoseconds: 1_796_140_182_000_000_000, contentHash: BatchAcrossMountsTests.fingerprint),
        // Not fingerprinted (not read yet): another mount's journal is never assumed to be its.
        FileIdentity(device: 63, inode: 12, size: 900, modifiedNanoseconds: 1_796_140_181_000_000_000, contentHash: nil),
        // The same device, another inode and other content: a replaced file on one mount.
        FileIdentity(device: 51, inode: 9_871_235, size: 900, modifiedNanoseconds: 1_796_140_181_123_456_789, contentHash: 0x1234),
    ])
    func aReplacedFileWithTheSameNameEndsTheOldBatchThenStartsAfresh(found: FileIdentity) throws {
        #expect(!BatchRecovery.journalNames(found, recorded: written))
        #expect(BatchRecovery.decide(journal: try journal(), input: found, partialLength: 40) == .replaced(try journal()))
        #expect(BatchRecovery.decide(journal: try journal(lines: 1), input: found, partialLength: 40) == .replaced(try journal(lines: 1)),
                "a finished journal is published as its own batch, never as the new file's")
    }

    @Test func aCopyWithAnotherBirthTimeIsAnotherFileWhereBothKeepOne() throws {
        let born = written.with(bornNanoseconds: 1_796_140_100_000_000_000)
        let copy = FileIdentity(device: 51, inode: 9_871_235, size: 900, modifiedNanoseconds: born.modifiedNanoseconds,
                                bornNanoseconds: 1_796_140_190_000_000_000, contentHash: Self.fingerprint)
        #expect(!BatchRecovery.journalNames(copy, recorded: born))
        #expect(BatchRecovery.journalNames(copy.with(bornNanoseconds: born.bornNanoseconds), recorded: born))
    }

    @Test func aJournalWithoutAFingerprintIsNotResumedFromAnotherMount() throws {
        // Journals written before the fingerprint was kept.
        let old = FileIdentity(device: 51, inode: 9_871_234, size: 900, modifiedNanoseconds: 1_796_140_181_123_456_789)
        let partial = try journal(input: old)
        #expect(BatchRecovery.decide(journal: partial, input: throughAnotherMount, partialLength: 40) == .replaced(partial))
        // Through its own mount it still resumes, as before.
        #expect(BatchRecovery.decide(journal: partial, input: written, partialLength: 40) == .resume(partial))
    }

    @Test func onItsOwnMountContentChangedInPlaceIsAnotherBatch() throws {
        // Same inode, size and time (a writer that put the time back): the fingerprint tells.
        let edited = FileIdentity(device: 51, inode: 9_871_234, size: 900, modifiedNanoseconds: written.modifiedNanoseconds, contentHash: 0x1234)
        #expect(BatchRecovery.decide(journal: try journal(lines: 1), input: edited, partialLength: 40) == .replaced(try journal(lines: 1)))
        #expect(BatchRecovery.decide(journal: try journal(), input: edited.with(contentHash: Self.fingerprint), partialLength: 40) == .resume(try journal()))
    }

    @Test func theOutputMustStillHoldWhatTheJournalCommitted() throws {
        // Through another mount as through one: a shorter output cannot be resumed.
        #expect(BatchRecovery.decide(journal: try journal(committed: [0, 2]), input: throughAnotherMount, partialLength: 79) == .fresh)
        #expect(BatchRecovery.decide(journal: try journal(committed: [0, 2]), input: throughAnotherMount, partialLength: nil) == .fresh)
    }

    @Test func theFingerprintReadInPiecesIsTheWholeFilesFingerprint() {
        let bytes = Array("{\"custom_id\":\"a\",\"body\":{}}\n{\"custom_id\":\"b\",\"body\":{}}\n".utf8)
        for cut in 0...bytes.count {
            var stream = FingerprintStream()
            stream.add(Array(bytes[..<cut]))
            stream.add([])
            stream.add(Array(bytes[cut...]))
            #expect(stream.value == Fingerprint.hash(bytes))
        }
        #expect(FingerprintStream().value == Fingerprint.hash([]))
        var other = FingerprintStream()
        other.add(Array(bytes.reversed()))
        #expect(other.value != Fingerprint.hash(bytes))
    }
}
