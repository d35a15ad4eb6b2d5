/// The spool's root as the daemon pinned it at start: where it is (device and inode), what
/// it is (its filesystem's type, whether it is the root of a mount) and the spool's id
/// (`state/.spool-id`). Paths are followed by name: a root unmounted, removed, or swapped
/// for a link while the daemon runs would have answers published into whatever folder now
/// has the name (and the requests, still in the real `outgoing`, sent again once it is
/// back).
///
/// A network share mounted again (GlusterFS, sshfs) is the same folder under a new device
/// number: a root found elsewhere is this spool when its id is this spool's and it is the
/// same kind of place (`judge`). The kind rules out the commonest impostor, a copy of the
/// spool left on the disk under the mount point, which the id alone would take for it.
public struct SpoolRootIdentity: Sendable, Equatable {
    /// Where the root is: its device and inode.
    public struct Place: Sendable, Equatable, CustomStringConvertible {
        public let device: UInt64
        public let inode: UInt64

        public init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }

        public var description: String { "device \(device), inode \(inode)" }
    }

    public var place: Place
    /// `statfs`'s `f_type`.
    public var fileSystemType: Int64
    /// Whether the root is itself the root of a mount (its device differs from its parent's).
    public var isMountRoot: Bool
    /// The spool's id; nil when it could not be read or made (the pin then never follows).
    public var spoolID: String?
    /// Whether the configured root was a symbolic link at start (a spool configured
    /// through a link): then a link there is the configuration, not a swap.
    public var reachedThroughLink = false

    public init(place: Place, fileSystemType: Int64, isMountRoot: Bool, spoolID: String?) {
        self.place = place
        self.fileSystemType = fileSystemType
        self.isMountRoot = isMountRoot
        self.spoolID = spoolID
    }

    /// What reading the id through a root found.
    public enum IDRead: Sendable, Equatable {
        case id(String)
        case missing
        case unusable
        case unreadable(String)
    }

    /// What a look at the root found.
    public enum Judgement: Sendable, Equatable {
        /// The folder pinned.
        case same
        /// This spool, by its id, at another place of the same kind: a share mounted again.
        case mountedAgain
        /// Another folder, or none; why, for the operator.
        case elsewhere(String)
    }

    /// A root that is a symbolic link now, when it was not at start, is another folder
    /// whatever it holds: a share mounted again is never a link (a link to a copy of the
    /// spool was followed as one). nil: the link test says nothing.
    public func judgeLink(rootIsLink: Bool) -> Judgement? {
        rootIsLink && !reachedThroughLink ? .elsewhere("the root is a symbolic link now, which it was not at start") : nil
    }

    /// Whether a root seen at `seen` is the pinned one, and if not, whether it is this spool
    /// mounted again. `candidate` tells what the root there is and the id read through it;
    /// it is asked only when the place differs.
    public func judge(_ seen: Place, candidate: () -> (fileSystemType: Int64, isMountRoot: Bool, id: IDRead)) -> Judgement {
        if seen == place { return .same }
        guard let spoolID else { return .elsewhere("the spool's id was not known at start") }
        let found = candidate()
        guard found.fileSystemType == fileSystemType else {
            return .elsewhere("it is on another kind of filesystem than the spool was (a disk under an unmounted share?)")
        }
        guard found.isMountRoot == isMountRoot else {
            return .elsewhere(isMountRoot ? "it is not a mount point, as the spool's root was (a share unmounted?)"
                                          : "it is a mount point, as the spool's root was not")
        }
        switch found.id {
        case .id(spoolID): return .mountedAgain
        case .id: return .elsewhere("its state/.spool-id is another spool's")
        case .missing: return .elsewhere("it has no state/.spool-id")
        case .unusable: return .elsewhere("its state/.spool-id holds no id")
        case .unreadable(let reason): return .elsewhere("its state/.spool-id cannot be read (\(reason))")
        }
    }
}

/// The pinned root, shared by every copy of the layout so that each part of the daemon sees
/// a move. Any thread may find the spool mounted again and propose the new place; one owner
/// (the daemon's status thread) locks the new root and only then moves the pin, so nothing
/// is sent through the new mount before this daemon holds its locks there.
public protocol SpoolRootPin: AnyObject, Sendable {
    /// The root as pinned now.
    var identity: SpoolRootIdentity { get }
    /// A new place found for this spool, not yet taken (`propose`).
    var proposed: SpoolRootIdentity.Place? { get }
    /// Notes that the spool was found mounted again at `place`.
    func propose(_ place: SpoolRootIdentity.Place)
}
