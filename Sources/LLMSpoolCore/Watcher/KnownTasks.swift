import Synchronization

/// The ids the scheduler currently holds, shared so that a rescan can skip them without
/// reading their files. The scheduler stays the judge of duplicates; this only saves work.
public final class KnownTasks: Sendable {
    private let ids = Mutex<Set<String>>([])

    public init() {}

    public func insert(_ id: String) { ids.withLock { _ = $0.insert(id) } }
    public func remove(_ id: String) { ids.withLock { _ = $0.remove(id) } }
    public func contains(_ id: String) -> Bool { ids.withLock { $0.contains(id) } }
    public var count: Int { ids.withLock { $0.count } }
}
