import Glibc

extension FileIdentity {
    /// The identity `lstat` or `fstat` gives; the content's fingerprint is added by whoever reads it.
    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                  modifiedNanoseconds: Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec),
                  changedNanoseconds: Int64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctim.tv_nsec))
    }
}
