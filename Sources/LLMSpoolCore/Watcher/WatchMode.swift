import CSystem
import Glibc

/// How the watcher learns of new files.
public enum WatchMode: String, Sendable, CaseIterable {
    /// inotify events, plus scans; right for local filesystems.
    case inotify
    /// Periodic directory scans only; the only way to see other machines' writes on a share.
    case poll
    /// inotify on local filesystems, polling on network and FUSE filesystems.
    case auto

    /// Filesystems whose changes made elsewhere inotify cannot see, by `statfs` magic.
    static let remoteFilesystems: [UInt: String] = [
        0x6969: "nfs", 0x517B: "smb", 0xFF534D42: "cifs", 0xFE534D42: "smb2", 0x65735546: "fuse",
        0x00C36400: "ceph", 0x01021997: "9p", 0x5346414F: "afs", 0x0BD00BD0: "lustre", 0x47504653: "gpfs",
    ]

    /// The mode to use for `path`, and why.
    public static func resolve(_ mode: WatchMode, path: String) -> (mode: WatchMode, reason: String) {
        switch mode {
        case .inotify: return (.inotify, "watch_mode is inotify")
        case .poll: return (.poll, "watch_mode is poll")
        case .auto:
            let type = llms_filesystem_type(path)
            guard type != -1 else { return (.inotify, "statfs failed; assuming a local filesystem") }
            let magic = UInt(UInt32(truncatingIfNeeded: type))
            if let name = remoteFilesystems[magic] {
                return (.poll, "\(path) is on \(name), where inotify cannot see other machines' writes")
            }
            return (.inotify, "\(path) is on a local filesystem (type 0x\(String(magic, radix: 16)))")
        }
    }
}
