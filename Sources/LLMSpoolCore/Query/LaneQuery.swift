/// The background lane as its intent records in `state/remote` tell it, read-only: which
/// remote batch carries which request, for `status`, `show` and `queue`, with or without
/// a running daemon.
public struct LaneQuery: Sendable {
    /// One group being carried.
    public struct Group: Sendable, Equatable {
        public var group: String
        public var endpoint: String
        public var state: String
        public var batchID: String?
        public var remoteStatus: String?
        public var members: [String]

        /// What a person reads about a member: `deferred to batch <id> (<status>)`, or the
        /// group's step before the provider named its batch.
        public var description: String {
            guard let batchID else { return "deferred to the background lane: group \(group) on \(endpoint), \(state), no remote batch yet" }
            return "deferred to batch \(batchID) (\(remoteStatus ?? state)) on \(endpoint)"
        }

        public var json: [String: Any] {
            var object: [String: Any] = ["group": group, "endpoint": endpoint, "state": state, "requests": members.count]
            if let batchID { object["batch_id"] = batchID }
            if let remoteStatus { object["remote_status"] = remoteStatus }
            return object
        }
    }

    public let groups: [Group]

    public init(layout: SpoolLayout) {
        // A view of the spool: no intent folder means no group in the lane.
        let found = (try? RemoteIntentStore(layout: layout).loadAll()) ?? []
        groups = found.compactMap { entry in
            guard case .intent(let intent) = entry, intent.state != .published else { return nil }
            return Group(group: intent.group, endpoint: intent.endpoint, state: intent.state.rawValue, batchID: intent.batchID,
                         remoteStatus: intent.remoteStatus, members: intent.members.map(\.id))
        }
    }

    /// The group carrying `id`, when one does.
    public func group(of id: String) -> Group? {
        groups.first { $0.members.contains(id) }
    }

    /// Each member's group, for listing many requests.
    public var byMember: [String: Group] {
        var map: [String: Group] = [:]
        for group in groups { for member in group.members { map[member] = group } }
        return map
    }
}
