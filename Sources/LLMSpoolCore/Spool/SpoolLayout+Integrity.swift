import Glibc

/// Whether the spool's names still lead into the spool the daemon started with.
extension SpoolLayout {
    /// The pin of the root as it is now: links followed, so that a spool configured
    /// through a link (`/var/spool/llmspool` pointing at a data disk) is the folder it
    /// points at. Nil when there is no folder under the name.
    public static func currentPin(of root: String) -> SpoolRootPin? {
        guard let info = try? Syscall.statFollowingLinks(root), info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return SpoolRootPin(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The layout pinned to the root as it is now (the daemon's start); unpinned when the
    /// root is missing, and the spool's own checks name that.
    public func pinnedNow() -> SpoolLayout {
        guard let pin = SpoolLayout.currentPin(of: root) else { return self }
        return pinned(to: pin)
    }

    /// Why nothing may be written through the spool's names now, or nil. The root must be
    /// the folder pinned at start (not unmounted, removed, or swapped for a link or another
    /// folder), and no folder under it a symbolic link or something other than a folder.
    /// A folder that is missing is no problem here: it is made again before it is used.
    public func integrityProblem() -> String? {
        if let rootPin {
            guard let now = SpoolLayout.currentPin(of: root) else {
                return "the spool's root \(root) is gone (removed, or its filesystem unmounted); nothing is written or sent until the folder the daemon started with is back (a new folder needs a restart)"
            }
            guard now == rootPin else {
                return "the spool's root \(root) is not the folder the daemon started with (replaced by a link or another folder, or another filesystem mounted there); nothing is written or sent until it is back (a new folder needs a restart)"
            }
        }
        for folder in topFolders {
            var info = Glibc.stat()
            guard Glibc.lstat(folder, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                continue
            case S_IFLNK:
                return "the spool's folder \(folder) is a symbolic link; llmspool does not follow links inside the spool (results and removals would land outside it): make it a folder, or mount the other place there"
            default:
                return "the spool's folder \(folder) is not a folder; move the file away"
            }
        }
        return nil
    }
}
