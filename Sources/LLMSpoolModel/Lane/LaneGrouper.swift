/// Gathers deferrable requests into groups, one per endpoint and url (OpenAI takes one
/// endpoint per batch) and per batch file, and says when a group is to be sent: when it holds
/// `maxRequests`, when the next member would pass `maxBytes`, or when its oldest member
/// has waited `lingerSeconds`. Events in, actions out; it reads no clock. Pure.
public struct LaneGrouper: Sendable {
    /// The limits of one group (the providers' own, by default OpenAI's).
    public struct Limits: Sendable, Equatable {
        public var maxRequests: Int
        public var maxBytes: Int
        public var lingerSeconds: Double

        public init(maxRequests: Int = 50_000, maxBytes: Int = 200 * 1024 * 1024, lingerSeconds: Double = 60) {
            self.maxRequests = max(1, maxRequests)
            self.maxBytes = max(1, maxBytes)
            self.lingerSeconds = max(0, lingerSeconds)
        }
    }

    /// What a group is for: the endpoint's name, the dialect's url, and the batch file its
    /// members are lines of (nil for request files). On a shared spool a group carrying lines
    /// of a batch file is followed only by the daemon that runs that batch
    /// (`RemoteGroupClaims.runsLines`); lines of two batch files in one group could leave it
    /// to no daemon at all once two daemons run the two batches.
    public struct Key: Sendable, Hashable {
        public var endpoint: String
        public var url: String
        public var batch: String?

        public init(endpoint: String, url: String, batch: String? = nil) {
            self.endpoint = endpoint
            self.url = url
            self.batch = batch
        }
    }

    /// One request waiting in a group; `bytes` is the size of its line in the input file.
    public struct Member: Sendable, Equatable {
        public var id: String
        public var bytes: Int

        public init(id: String, bytes: Int) {
            self.id = id
            self.bytes = bytes
        }
    }

    public enum Event: Sendable, Equatable {
        case added(Member, Key, at: Double)
        /// The request was deleted or ended some other way before its group was sent.
        case removed(id: String)
        case tick(now: Double)
        /// A reload: only these endpoints batch now; what waits for another leaves.
        case batching(endpoints: Set<String>)
        /// Shutting down or draining: everything waiting goes now.
        case flush
    }

    public enum Reason: String, Sendable {
        case full, bytes, linger, flush
    }

    public enum Action: Sendable, Equatable {
        case send(Key, [Member], Reason)
        /// A request whose line alone passes `maxBytes`: it cannot be batched.
        case tooLarge(Member, Key)
        case removed(id: String, Key)
        /// Its endpoint no longer batches (`batching`): it goes another way.
        case unbatched(Member, Key)
    }

    struct Group: Sendable {
        var members: [Member] = []
        var bytes = 0
        var oldest: Double
    }

    public let limits: Limits
    private var groups: [Key: Group] = [:]
    private var keyOfMember: [String: Key] = [:]

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Requests waiting in all groups.
    public var waiting: Int { keyOfMember.count }

    /// When the next group lingers out: the caller ticks then (nil when nothing waits).
    public var nextDeadline: Double? { groups.values.map { $0.oldest + limits.lingerSeconds }.min() }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .added(let member, let key, let now):
            // A second add of a waiting id is the same request seen again (a rescan).
            guard keyOfMember[member.id] == nil else { return [] }
            guard member.bytes <= limits.maxBytes else { return [.tooLarge(member, key)] }
            var actions: [Action] = []
            if let group = groups[key], group.bytes + member.bytes > limits.maxBytes {
                actions.append(send(key, .bytes))
            }
            // The group's own key is kept for each member: its strings shared, not a batch
            // name allocated per waiting line of a batch file.
            let stored = groups.index(forKey: key).map { groups.keys[$0] } ?? key
            var group = groups[key] ?? Group(oldest: now)
            group.members.append(member)
            group.bytes += member.bytes
            groups[key] = group
            keyOfMember[member.id] = stored
            if group.members.count >= limits.maxRequests { actions.append(send(key, .full)) }
            return actions + lingered(now: now)
        case .removed(let id):
            guard let key = keyOfMember.removeValue(forKey: id), var group = groups[key] else { return [] }
            if let index = group.members.firstIndex(where: { $0.id == id }) {
                group.bytes -= group.members[index].bytes
                group.members.remove(at: index)
            }
            groups[key] = group.members.isEmpty ? nil : group
            return [.removed(id: id, key)]
        case .tick(let now):
            return lingered(now: now)
        case .batching(let endpoints):
            var actions: [Action] = []
            for key in groups.keys.sorted(by: { ($0.endpoint, $0.url, $0.batch ?? "") < ($1.endpoint, $1.url, $1.batch ?? "") }) where !endpoints.contains(key.endpoint) {
                for member in groups.removeValue(forKey: key)?.members ?? [] {
                    keyOfMember[member.id] = nil
                    actions.append(.unbatched(member, key))
                }
            }
            return actions
        case .flush:
            return groups.keys.sorted { ($0.endpoint, $0.url, $0.batch ?? "") < ($1.endpoint, $1.url, $1.batch ?? "") }.map { send($0, .flush) }
        }
    }

    private mutating func lingered(now: Double) -> [Action] {
        groups.filter { now >= $0.value.oldest + limits.lingerSeconds }
            .sorted { $0.value.oldest < $1.value.oldest }
            .map { send($0.key, .linger) }
    }

    private mutating func send(_ key: Key, _ reason: Reason) -> Action {
        let group = groups.removeValue(forKey: key) ?? Group(oldest: 0)
        for member in group.members { keyOfMember[member.id] = nil }
        return .send(key, group.members, reason)
    }
}
