import Synchronization

/// Set once when the daemon stops. The lane's loop stops between steps on it, and an
/// exchange under way aborts at libcurl's next progress call (about a second), so that a
/// provider trickling an answer cannot hold the daemon past its stop.
final class LaneStopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .relaxed) }

    var isSet: Bool { value.load(ordering: .relaxed) }
}
