import Synchronization

/// The daemon's `SpoolRootPin`: one instance shared by every copy of the layout.
public final class SharedRootPin: SpoolRootPin {
    private struct State {
        var identity: SpoolRootIdentity
        var proposed: SpoolRootIdentity.Place?
        var moves = 0
    }

    private let state: Mutex<State>

    public init(_ identity: SpoolRootIdentity) {
        state = Mutex(State(identity: identity))
    }

    public var identity: SpoolRootIdentity { state.withLock { $0.identity } }
    public var proposed: SpoolRootIdentity.Place? { state.withLock { $0.proposed } }
    /// How many times the pin moved to a new mount.
    public var moves: Int { state.withLock { $0.moves } }

    public func propose(_ place: SpoolRootIdentity.Place) {
        state.withLock { $0.proposed = place }
    }

    /// The proposal was for a place the root no longer is: forgotten.
    func dropProposal() {
        state.withLock { $0.proposed = nil }
    }

    /// The pin follows the spool to `place`, where this daemon now holds its locks.
    func move(to place: SpoolRootIdentity.Place) {
        state.withLock { current in
            current.proposed = nil
            guard current.identity.place != place else { return }
            current.identity.place = place
            current.moves += 1
        }
    }

    /// The spool's id as found at the pinned root (made again, or changed by another
    /// daemon's start): the one a remount is then known by.
    func adopt(spoolID: String) {
        state.withLock { $0.identity.spoolID = spoolID }
    }
}
