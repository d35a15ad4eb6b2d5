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
        let place = SpoolRootIdentity.Place(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        let identity: SpoolRootIdentity
        do {
            identity = SpoolRootIdentity(place: place, fileSystemType: try Syscall.fileSystemType(root), isMountRoot: try isMountRoot(info),
                                         spoolID: spoolID)
        } catch {
            // A filesystem that cannot say what it is still runs the spool: the pin then
            // never follows it to a new mount (no id), as before ids were kept.
            identity = SpoolRootIdentity(place: place, fileSystemType: -1, isMountRoot: false, spoolID: nil)
        }
        var pinnedIdentity = identity
        pinnedIdentity.reachedThroughLink = try Syscall.lstat(root).st_mode & S_IFMT == S_IFLNK
        return pinned(to: SharedRootPin(pinnedIdentity))
    }

    /// Whether the root (as `info` says) is the root of a mount: its parent is on another device.
    private func isMountRoot(_ info: stat) throws -> Bool {
        try Syscall.statFollowingLinks(root + "/..").st_dev != info.st_dev
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
        inspectFolders(folders, rootChecked: false)
    }

    /// `rootChecked`: the folders alone, under a root already looked at.
    private func inspectFolders(_ folders: [String]?, rootChecked: Bool) -> FolderInspection {
        var inspection = FolderInspection()
        if !rootChecked, let rootPin {
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
            let seen = SpoolRootIdentity.Place(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            if info.st_mode & S_IFMT != S_IFDIR || seen != rootPin.identity.place {
                inspection.problem = rootElsewhere(info, seen, rootPin)
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

    /// Why the root found at another place than the pin's holds the spool: another folder,
    /// or this spool mounted again, proposed to the pin's owner (which locks it there, then
    /// moves the pin). Every top folder is looked at before the id is read through `state`:
    /// a folder whose `state` is a link to the real spool's is not taken for it.
    private func rootElsewhere(_ info: stat, _ seen: SpoolRootIdentity.Place, _ pin: any SpoolRootPin) -> String {
        let held = "nothing is written or sent until it is back (a new folder needs a restart)"
        guard info.st_mode & S_IFMT == S_IFDIR else { return "the spool's root \(root) is not a folder now; \(held)" }
        var judgement: SpoolRootIdentity.Judgement = .elsewhere("its folders are not the spool's")
        let rootIsLink: Bool
        do {
            rootIsLink = try Syscall.lstat(root).st_mode & S_IFMT == S_IFLNK
        } catch {
            return "the spool's root \(root) cannot be looked at (\(error)); \(held)"
        }
        if let byLink = pin.identity.judgeLink(rootIsLink: rootIsLink) {
            judgement = byLink
        } else if inspectFolders(topFolders, rootChecked: true).problem == nil {
            judgement = pin.identity.judge(seen) {
                let type: Int64
                let mountRoot: Bool
                do {
                    type = try Syscall.fileSystemType(root)
                    mountRoot = try isMountRoot(info)
                } catch {
                    return (-1, false, .unreadable("\(error)"))
                }
                return (type, mountRoot, SpoolIDFile.read(spoolIDFile))
            }
        }
        switch judgement {
        case .same:
            return "the spool's root \(root) moved while it was looked at; nothing is written or sent until the next look"
        case .mountedAgain:
            pin.propose(seen)
            return "the spool's filesystem was mounted again (the same spool, by its id, at \(seen)); nothing is written or sent until this daemon has locked it there (within a second)"
        case .elsewhere(let why):
            return "the spool's root \(root) is not the folder the daemon started with (\(why)): replaced by a link or another folder, or another filesystem mounted there; \(held)"
        }
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
