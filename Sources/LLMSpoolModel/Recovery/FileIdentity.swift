/// Identifies one instance of a request file: a new file dropped under an old name is a
/// new task, and must not inherit the old one's history.
///
/// Device and inode say which file; an inode is recycled once its file is deleted, so they
/// are not enough alone. The birth time (which no producer can set, unlike the
/// modification time that `cp -p` keeps) and the content's fingerprint tell a recycled
/// inode from the file that was read. The change time would not do: network filesystems
/// change it behind the producer's back (GlusterFS keeps its own metadata in extended
/// attributes of the file), and a file whose identity changes is never unlinked.
public struct FileIdentity: Sendable, Equatable {
    public let device: UInt64
    public let inode: UInt64
    public let size: Int64
    public let modifiedNanoseconds: Int64
    /// The file's birth time (statx); nil where the filesystem keeps none, and in records
    /// written before it was kept.
    public let bornNanoseconds: Int64?
    /// FNV-1a of the content as intake read it; nil when the content was not read.
    public let contentHash: UInt64?

    public init(device: UInt64, inode: UInt64, size: Int64, modifiedNanoseconds: Int64, bornNanoseconds: Int64? = nil,
                contentHash: UInt64? = nil) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.bornNanoseconds = bornNanoseconds
        self.contentHash = contentHash
    }

    /// Whether both name the same instance of a file: every field both know must agree.
    /// A field one side lacks (an older record, a file not read) is not held against it.
    public func isSameInstance(as other: FileIdentity) -> Bool {
        guard device == other.device, inode == other.inode, size == other.size, modifiedNanoseconds == other.modifiedNanoseconds else {
            return false
        }
        if let born = bornNanoseconds, let otherBorn = other.bornNanoseconds, born != otherBorn { return false }
        if let hash = contentHash, let otherHash = other.contentHash, hash != otherHash { return false }
        return true
    }

    /// Whether both name the same instance as seen through two mounts of one share, where
    /// device and inode numbers are each mount's own (sshfs numbers inodes per mount): the
    /// size, the modification time to the second (SFTP keeps no finer), the birth time when
    /// both know it, and the content's fingerprint, which both must have.
    public func isSameInstanceAcrossMounts(as other: FileIdentity) -> Bool {
        guard size == other.size, modifiedNanoseconds / 1_000_000_000 == other.modifiedNanoseconds / 1_000_000_000,
              let hash = contentHash, let otherHash = other.contentHash, hash == otherHash else { return false }
        if let born = bornNanoseconds, let otherBorn = other.bornNanoseconds, born != otherBorn { return false }
        return true
    }

    /// The same identity with the file's birth time.
    public func with(bornNanoseconds: Int64?) -> FileIdentity {
        FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modifiedNanoseconds,
                     bornNanoseconds: bornNanoseconds, contentHash: contentHash)
    }

    /// The same identity with the content's fingerprint.
    public func with(contentHash: UInt64) -> FileIdentity {
        FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modifiedNanoseconds,
                     bornNanoseconds: bornNanoseconds, contentHash: contentHash)
    }
}
