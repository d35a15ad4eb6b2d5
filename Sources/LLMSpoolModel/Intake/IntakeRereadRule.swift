/// Whether intake reads a request file again when it hears of it (an inotify close-write
/// or rename, a settle check): a file of an id the scheduler already holds is read again
/// only when it may have changed since intake last read it, so that the same bytes are
/// not read, parsed and dropped as a duplicate at every event.
///
/// "May have changed" is judged by what `lstat` tells: device, inode, size, modification
/// time and change time. The change time is in it because no writer can set it back (an
/// edit in place that keeps the size and restores the modification time still moves it);
/// a filesystem that moves it on its own costs a read, never a missed change.
public enum IntakeRereadRule {
    /// What `lstat` said of a request file when intake read it.
    public struct Snapshot: Sendable, Equatable {
        public let device: UInt64
        public let inode: UInt64
        public let size: Int64
        public let modifiedNanoseconds: Int64
        public let changedNanoseconds: Int64

        public init(device: UInt64, inode: UInt64, size: Int64, modifiedNanoseconds: Int64, changedNanoseconds: Int64) {
            self.device = device
            self.inode = inode
            self.size = size
            self.modifiedNanoseconds = modifiedNanoseconds
            self.changedNanoseconds = changedNanoseconds
        }
    }

    /// `known`: the scheduler holds the file's id. `lastRead`: the file as intake last read
    /// it under this name, if it did. `current`: the file now; nil when it cannot be looked
    /// at (gone, or an error), which the read itself then reports.
    public static func mustRead(known: Bool, lastRead: Snapshot?, current: Snapshot?) -> Bool {
        guard known, let lastRead, let current else { return true }
        return lastRead != current
    }
}
