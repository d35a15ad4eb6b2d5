import Foundation

/// How daemons sharing a spool hold their claims: lease files alone, or lease files each
/// held under an open file description lock (`F_OFD_SETLK`) served by the filesystem's own
/// lock manager. A lock is a round trip to the server on the file itself, and it dies with
/// its holder, so a killed daemon's claims are taken over at once instead of after the
/// lease time. Decided at start from the filesystem's type and a probe of two descriptors.
public enum ClaimMethod: String, Sendable, Equatable {
    case locks
    case leaseFiles = "lease-files"

    /// What a probe of two descriptors on one file showed.
    public enum Probe: Equatable, Sendable {
        /// The first lock was granted, the second refused while the first was held, and
        /// granted once it was dropped.
        case works
        /// A lock call failed (`ENOLCK`, `EINVAL`, `ENOSYS`...): no lock manager.
        case failed(errno: Int32)
        /// The second lock was granted while the first was held: the locks mean nothing.
        case noConflict
        /// The second lock was still refused after the first was dropped.
        case neverReleased
    }

    /// Filesystems whose locks are served to every client by a lock manager on the server.
    static let sharedLockFilesystems: Set<String> = ["nfs4", "ceph", "fuse.ceph-fuse", "fuse.ceph", "fuse.glusterfs", "gpfs", "lustre", "ocfs2", "gfs2"]
    /// Filesystems on one machine: every lock is seen by every daemon there.
    static let localFilesystems: Set<String> = ["ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs", "jfs", "reiserfs", "bcachefs", "overlay", "ramfs"]

    /// The method for a spool on a filesystem of `type` (as `/proc/self/mountinfo` names it,
    /// `fuse.sshfs` for a FUSE one) mounted with `options`, given the probe, and why.
    public static func choose(filesystem type: String, options: [String], probe: Probe) -> (method: ClaimMethod, reason: String) {
        switch probe {
        case .works: break
        case .failed(let code): return (.leaseFiles, "locks fail on \(type) (errno \(code))")
        case .noConflict: return (.leaseFiles, "two descriptors both got the lock on \(type)")
        case .neverReleased: return (.leaseFiles, "a dropped lock stayed taken on \(type)")
        }
        if localFilesystems.contains(type) { return (.locks, "\(type) is local: its locks are the kernel's") }
        // NFS (v3 through lockd, v4 in the protocol) unless mounted to keep locks local.
        if type.hasPrefix("nfs"),
           options.contains("nolock") || options.contains(where: { $0 == "local_lock=all" || $0 == "local_lock=posix" }) {
            return (.leaseFiles, "\(type) is mounted with local locks (nolock or local_lock)")
        }
        if sharedLockFilesystems.contains(type) { return (.locks, "\(type) serves locks to every client") }
        switch type {
        case "nfs":
            return (.locks, "nfs serves locks through lockd")
        case "cifs", "smb3":
            if options.contains("nobrl") { return (.leaseFiles, "\(type) is mounted with nobrl: locks stay local") }
            return (.locks, "\(type) serves byte-range locks")
        default:
            // FUSE filesystems without a lock operation (sshfs, bindfs) get the kernel's
            // local locks: the probe passes, yet other clients never see them.
            return (.leaseFiles, "locks on \(type) may be local to each client")
        }
    }

    /// The filesystem type and mount options of the mount holding `path` (an absolute path
    /// without symbolic links), from the text of `/proc/self/mountinfo`.
    public static func mount(of path: String, mountinfo: String) -> (type: String, options: [String])? {
        var best: (length: Int, type: String, options: [String])?
        for line in mountinfo.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count >= 2 else { continue }
            let fields = halves[0].split(separator: " ")
            let tail = halves[1].split(separator: " ")
            guard fields.count >= 6, tail.count >= 1 else { continue }
            let point = unescape(String(fields[4]))
            let inside = point == "/" || path == point || path.hasPrefix(point + "/")
            guard inside, point.count >= (best?.length ?? -1) else { continue }
            let options = fields[5].split(separator: ",").map(String.init) + (tail.count >= 3 ? tail[2].split(separator: ",").map(String.init) : [])
            best = (point.count, String(tail[0]), options)
        }
        return best.map { ($0.type, $0.options) }
    }

    /// mountinfo writes space, tab, newline and backslash as octal escapes.
    static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var bytes: [UInt8] = []
        let raw = Array(text.utf8)
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "\\"), index + 3 < raw.count,
               let value = UInt8(String(decoding: raw[(index + 1)...(index + 3)], as: UTF8.self), radix: 8) {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(raw[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
