import Synchronization

/// The device and inode of the spool's root as the daemon found it at start, and the
/// spool's id (`state/.spool-id`). Paths are followed by name: a root unmounted, removed,
/// or swapped for a link while the daemon runs would have answers published into whatever
/// folder now has the name (and the requests, still in the real `outgoing`, sent again
/// once it is back).
///
/// A network share mounted again (GlusterFS, sshfs, NFS through autofs) is the same folder
/// under a new device number: the id, read through the root, tells it from another folder,
/// and the pin moves to the new mount (`judge`). Shared by every copy of the layout, so
/// that each part of the daemon sees the move.
public final class SpoolRootPin: Sendable, Equatable {
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

    /// What a look at the root found.
    public enum Judgement: Sendable, Equatable {
        /// The folder pinned.
        case same
        /// The same spool, by its id, at another place: a share mounted again.
        case mountedAgain
        /// Another folder, or none: nothing is written through the name.
        case elsewhere
    }

    private let state: Mutex<(place: Place, moves: Int)>
    /// The spool's id, nil when it could not be read or made (the pin then never moves).
    public let spoolID: String?

    public init(device: UInt64, inode: UInt64, spoolID: String? = nil) {
        state = Mutex((Place(device: device, inode: inode), 0))
        self.spoolID = spoolID
    }

    public var place: Place { state.withLock { $0.place } }

    /// How many times the pin moved to a new mount.
    public var moves: Int { state.withLock { $0.moves } }

    /// Whether a root seen at `seen` is the pinned one, and if not, whether it is this spool
    /// mounted again. `readID` reads the id found through the root now (nil when there is
    /// none); it is called only when the place differs.
    public func judge(_ seen: Place, readID: () -> String?) -> Judgement {
        if seen == place { return .same }
        guard let spoolID, readID() == spoolID else { return .elsewhere }
        return .mountedAgain
    }

    /// The pin follows the spool to where it is mounted now.
    public func move(to place: Place) {
        state.withLock { current in
            guard current.place != place else { return }
            current.place = place
            current.moves += 1
        }
    }

    public static func == (lhs: SpoolRootPin, rhs: SpoolRootPin) -> Bool {
        lhs === rhs || (lhs.place == rhs.place && lhs.spoolID == rhs.spoolID)
    }
}
