import LLMSpoolModel
import Testing

/// `/proc/locks` as the kernel writes it: holders of a file's flock are found by its
/// device and inode; waiters, other files and other kinds of lock are not.
@Suite struct LockTableTests {
    static let table = """
    1: FLOCK  ADVISORY  WRITE 26097 fe:00:16228361 0 EOF
    1: -> FLOCK  ADVISORY  WRITE 30001 fe:00:16228361 0 EOF
    2: FLOCK  ADVISORY  READ  26029 fe:00:16228376 0 EOF
    3: FLOCK  ADVISORY  READ  26030 fe:00:16228376 0 EOF
    4: POSIX  ADVISORY  WRITE 777 fe:00:16228361 0 EOF
    5: OFDLCK ADVISORY  WRITE -1 fe:00:16228361 0 EOF
    6: FLOCK  ADVISORY  WRITE 4242 103:02:16228361 0 EOF
    7: FLOCK  ADVISORY  WRITE x fe:00:16228361 0 EOF
    """

    @Test func holdersOfAFilesFlockAreItsOwnOnly() {
        #expect(LockTable.flockHolders(major: 0xfe, minor: 0, inode: 16_228_361, in: Self.table) == [26097])
        #expect(LockTable.flockHolders(major: 0xfe, minor: 0, inode: 16_228_376, in: Self.table) == [26029, 26030], "shared holders, each")
        #expect(LockTable.flockHolders(major: 0x103, minor: 2, inode: 16_228_361, in: Self.table) == [4242])
        #expect(LockTable.flockHolders(major: 0xfe, minor: 1, inode: 16_228_361, in: Self.table).isEmpty)
        #expect(LockTable.flockHolders(major: 0xfe, minor: 0, inode: 1, in: "").isEmpty)
    }

    @Test func aDeviceNumberSplitsAsLinuxDoes() {
        let disk = LockTable.deviceNumbers(0xfe00)
        #expect(disk.major == 0xfe && disk.minor == 0)
        let small = LockTable.deviceNumbers(0x0803)
        #expect(small.major == 8 && small.minor == 3)
        // Large numbers: major 0x1234, minor 0x56789 (glibc's makedev).
        let large = LockTable.deviceNumbers((0x1234 & 0xfff) << 8 | (0x1234 & ~0xfff) << 32 | (0x56789 & 0xff) | (0x56789 & ~0xff) << 12)
        #expect(large.major == 0x1234 && large.minor == 0x56789)
    }
}
