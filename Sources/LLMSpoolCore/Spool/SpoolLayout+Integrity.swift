import Glibc

/// Whether the spool's names still lead into the spool the daemon started with.
extension SpoolLayout {
    /// What a look at the root and the folders under it found.
    public struct FolderInspection: Sendable {
        /// Why nothing may be written through the spool's names now (`integrityProblem`).
        public var problem: String?
        /// The top folders that are missing (made again before they are used).
        public var missing: [String] = []
    }

    /// The layout pinned to its root as it is now (the daemon's start, after `create()`):
    /// links followed, so that a spool configured through a link (`/var/spool/llmspool`
    /// pointing at a data disk) is the folder it points at.
    /// `spoolID`: the spool's id (`SpoolIDFile`), by which the pin follows the spool to a
    /// new mount; nil: it never moves.
    public func pinnedNow(spoolID: String?) throws -> SpoolLayout {
        let info = try Syscall.statFollowingLinks(root)
        guard info.st_mode & S_IFMT == S_IFDIR else { throw SystemError(errno: ENOTDIR, call: "stat", path: root) }
        return pinned(to: SpoolRootPin(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), spoolID: spoolID))
    }

    /// Why nothing may be written through the spool's names now, or nil. The root must be
    /// the folder pinned at start (not unmounted, removed, or swapped for a link or another
    /// folder), and no folder under it a symbolic link or something other than a folder.
    /// A folder that is missing is no problem here: it is made again before it is used.
    /// `folders`: the top folders a caller is about to write through (a look each), all
    /// of them when nil.
    public func integrityProblem(of folders: [String]? = nil) -> String? {
        inspectFolders(folders ?? topFolders).problem
    }

    /// `integrityProblem` and the missing ones of `folders`, with one look at each.
    public func inspectFolders(_ folders: [String]? = nil) -> FolderInspection {
        var inspection = FolderInspection()
        if let rootPin {
            let info: stat
            do {
                info = try Syscall.statFollowingLinks(root)
            } catch let error as SystemError where error.errno == ENOENT || error.errno == ENOTDIR {
                inspection.problem = "the spool's root \(root) is gone (removed, or its filesystem unmounted); nothing is written or sent until the folder the daemon started with is back (a new folder needs a restart)"
                return inspection
            } catch {
                inspection.problem = "the spool's root \(root) cannot be looked at (\(error)); nothing is written or sent until it can"
                return inspection
            }
            let seen = SpoolRootPin.Place(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            let judgement = info.st_mode & S_IFMT != S_IFDIR ? .elsewhere : rootPin.judge(seen) {
                // Read only when the root moved. One that cannot be read is no id: the spool
                // stays held, and the problem below says so.
                do {
                    guard case .id(let id)? = try SpoolIDFile.read(spoolIDFile) else { return nil }
                    return id
                } catch {
                    return nil
                }
            }
            switch judgement {
            case .same:
                break
            case .mountedAgain:
                // The same spool on a new mount (a share mounted again): the status thread
                // logs it and locks the new root.
                rootPin.move(to: seen)
            case .elsewhere:
                inspection.problem = "the spool's root \(root) is not the folder the daemon started with (replaced by a link or another folder, or another filesystem mounted there); nothing is written or sent until it is back (a new folder needs a restart)"
                return inspection
            }
        }
        for folder in folders ?? topFolders {
            let info: stat
            do {
                info = try Syscall.lstat(folder)
            } catch let error as SystemError where error.errno == ENOENT {
                inspection.missing.append(folder)
                continue
            } catch {
                inspection.problem = "the spool's folder \(folder) cannot be looked at (\(error)); nothing is written or sent until it can"
                return inspection
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                continue
            case S_IFLNK:
                inspection.problem = "the spool's folder \(folder) is a symbolic link; llmspool does not follow links inside the spool (results and removals would land outside it): make it a folder, or mount the other place there"
            default:
                inspection.problem = "the spool's folder \(folder) is not a folder; move the file away"
            }
            return inspection
        }
        return inspection
    }

    /// Requests move from `outgoing` into `failed` (and `hold`) by rename, which cannot
    /// cross filesystems: with one of them mounted on its own, every failure stayed half
    /// done (its record written, its request in `outgoing`, an error at every scan).
    public func crossDeviceProblem() throws -> String? {
        let device = try Syscall.lstat(outgoing).st_dev
        for folder in [failed, hold] {
            let info: stat
            do {
                info = try Syscall.lstat(folder)
            } catch let error as SystemError where error.errno == ENOENT {
                continue
            }
            if info.st_dev != device {
                return "\(folder) is on another filesystem than \(outgoing): requests are moved there by rename, which cannot cross filesystems; mount the other filesystem at the spool's root instead"
            }
        }
        return nil
    }
}
