import Synchronization

/// The requests whose start was held because the spool's folders were not its own
/// (`Finisher.holdWhileElsewhere`), for the status thread to release once they are back:
/// otherwise each would wait the longest back-off (a minute by default). Written by the
/// finishers, taken by the status thread.
public final class HeldStarts: Sendable {
    private let ids = Mutex<Set<String>>([])

    public init() {}

    func insert(_ id: String) {
        ids.withLock { _ = $0.insert(id) }
    }

    /// Every id held since the last call, in order; none are kept.
    func takeAll() -> [String] {
        ids.withLock { ids in
            defer { ids = [] }
            return ids.sorted()
        }
    }
}
