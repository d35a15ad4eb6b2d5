import CSystem
import Glibc

extension FileIdentity {
    /// The identity `lstat` or `fstat` gives; the birth time and the content's fingerprint
    /// are added by whoever can read them.
    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                  modifiedNanoseconds: Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec))
    }

    /// The birth time of the file at `path` (links not followed) or of `fd`; nil where the
    /// filesystem keeps none or cannot say.
    static func birthTime(fd: Int32 = -1, path: String = "") -> Int64? {
        var nanoseconds: Int64 = 0
        return llms_birth_time(fd, path, &nanoseconds) == 0 ? nanoseconds : nil
    }
}
