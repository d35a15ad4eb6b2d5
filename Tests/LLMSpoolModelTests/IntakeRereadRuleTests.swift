import Testing
@testable import LLMSpoolModel

@Suite struct IntakeRereadRuleTests {
    typealias Snapshot = IntakeRereadRule.Snapshot

    static let read = Snapshot(device: 1, inode: 10, size: 100, modifiedNanoseconds: 5_000, changedNanoseconds: 5_000)

    @Test func aKnownFileUnchangedSinceItsReadIsNotReadAgain() {
        #expect(!IntakeRereadRule.mustRead(known: true, lastRead: Self.read, current: Self.read))
    }

    @Test func aFileOfAnIdNotHeldIsAlwaysRead() {
        #expect(IntakeRereadRule.mustRead(known: false, lastRead: Self.read, current: Self.read))
        #expect(IntakeRereadRule.mustRead(known: false, lastRead: nil, current: Self.read))
    }

    @Test func aKnownIdsFileNeverReadUnderThisNameIsRead() {
        // `a.md` beside a held `a.json`: it must be read to wait for its turn.
        #expect(IntakeRereadRule.mustRead(known: true, lastRead: nil, current: Self.read))
    }

    @Test func aFileThatCannotBeLookedAtIsRead() {
        #expect(IntakeRereadRule.mustRead(known: true, lastRead: Self.read, current: nil))
    }

    static let changes: [(String, Snapshot)] = [
        ("another device", Snapshot(device: 2, inode: 10, size: 100, modifiedNanoseconds: 5_000, changedNanoseconds: 5_000)),
        ("replaced by rename", Snapshot(device: 1, inode: 11, size: 100, modifiedNanoseconds: 5_000, changedNanoseconds: 5_000)),
        ("grown", Snapshot(device: 1, inode: 10, size: 101, modifiedNanoseconds: 5_000, changedNanoseconds: 5_000)),
        ("written", Snapshot(device: 1, inode: 10, size: 100, modifiedNanoseconds: 6_000, changedNanoseconds: 6_000)),
        ("edited with its modification time put back", Snapshot(device: 1, inode: 10, size: 100, modifiedNanoseconds: 5_000, changedNanoseconds: 7_000)),
    ]

    @Test(arguments: changes) func anyChangeLstatSeesIsReadAgain(_ change: (String, Snapshot)) {
        #expect(IntakeRereadRule.mustRead(known: true, lastRead: Self.read, current: change.1), "\(change.0)")
    }
}
