import LLMSpoolModel
import Testing

/// `/proc/locks` as the kernel writes it: holders of a file's flock are found by its
/// inode; waiters, other inodes and other kinds of lock are not.
@Suite struct LockTableTests {
    static let table = """
    1: FLOCK  ADVISORY  WRITE 26097 fe:00:16228361 0 EOF
    1: -> FLOCK  ADVISORY  WRITE 30001 fe:00:16228361 0 EOF
    2: FLOCK  ADVISORY  READ  26029 fe:00:16228376 0 EOF
    3: FLOCK  ADVISORY  READ  26030 fe:00:16228376 0 EOF
    4: POSIX  ADVISORY  WRITE 777 fe:00:16228361 0 EOF
    5: OFDLCK ADVISORY  WRITE -1 fe:00:16228361 0 EOF
    6: FLOCK  ADVISORY  WRITE 4242 00:2f:16228361 0 EOF
    7: FLOCK  ADVISORY  WRITE x fe:00:16228361 0 EOF
    8: FLOCK  ADVISORY  WRITE 5151 fe:00:116228361 0 EOF
    """

    @Test func holdersOfAFilesFlockAreThoseOfItsInodeOnly() {
        // The device is not compared: on btrfs the table's is not stat's (00:2f here).
        #expect(LockTable.flockHolders(inode: 16_228_361, in: Self.table) == [26097, 4242])
        #expect(LockTable.flockHolders(inode: 16_228_376, in: Self.table) == [26029, 26030], "shared holders, each")
        #expect(LockTable.flockHolders(inode: 228_361, in: Self.table).isEmpty, "the whole inode, not its end")
        #expect(LockTable.flockHolders(inode: 1, in: "").isEmpty)
    }
}
