/// The requests intake left alone because another daemon's claim holds them, looked at
/// again a few at a time: a dead daemon's claims are then taken over within seconds
/// rather than at the next periodic rescan (a watched folder says nothing when a claim's
/// holder dies), without probing every claim of a live daemon each second. Pure.
public struct ClaimRecheckQueue: Sendable {
    /// At most this many names a round: each look reads a lease and may probe its lock,
    /// a round trip to the server on a network filesystem.
    public static let perRound = 64
    public static let intervalSeconds = 1.0

    private var order: [String] = []
    private var head = 0
    private var members: Set<String> = []
    private var lastRound = -Double.infinity

    public init() {}

    public var count: Int { members.count }

    public mutating func add(_ name: String) {
        if members.insert(name).inserted { order.append(name) }
    }

    /// The file left `outgoing`; its place in the order is skipped when reached.
    public mutating func remove(_ name: String) {
        members.remove(name)
    }

    /// The names to look at now, oldest first; each leaves the queue, and one still held
    /// elsewhere is added again by the look.
    public mutating func due(now: Double) -> [String] {
        guard !members.isEmpty, now - lastRound >= Self.intervalSeconds else { return [] }
        lastRound = now
        var taken: [String] = []
        while taken.count < Self.perRound, head < order.count {
            let name = order[head]
            head += 1
            if members.remove(name) != nil { taken.append(name) }
        }
        // Names removed and added again leave stale places behind: dropped once they are
        // most of what is left.
        if head == order.count {
            order.removeAll(keepingCapacity: true)
            head = 0
        } else if order.count - head > 2 * members.count + 1024 {
            var seen = Set<String>()
            order = order[head...].filter { members.contains($0) && seen.insert($0).inserted }
            head = 0
        } else if head > 4096 {
            order.removeFirst(head)
            head = 0
        }
        return taken
    }
}
