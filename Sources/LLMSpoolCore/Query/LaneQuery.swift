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
        /// The provider's request counts at the running daemon's last poll; nil without one.
        public var counts: (total: Int, completed: Int, failed: Int)?

        public static func == (lhs: Group, rhs: Group) -> Bool {
            (lhs.group, lhs.endpoint, lhs.state, lhs.batchID, lhs.remoteStatus, lhs.members)
                == (rhs.group, rhs.endpoint, rhs.state, rhs.batchID, rhs.remoteStatus, rhs.members)
                && lhs.counts.map { [$0.total, $0.completed, $0.failed] } == rhs.counts.map { [$0.total, $0.completed, $0.failed] }
        }

        /// What a person reads about a member: `deferred to batch <id> (<status>)`, or the
        /// group's step before the provider named its batch.
        public var description: String {
            guard let batchID else { return "deferred to the background lane: group \(group) on \(endpoint), \(state), no remote batch yet" }
            let progress = counts.map { ", \($0.completed) of \($0.total) completed, \($0.failed) failed" } ?? ""
            return "deferred to batch \(batchID) (\(remoteStatus ?? state)\(progress)) on \(endpoint)"
        }

        public var json: [String: Any] {
            var object: [String: Any] = ["group": group, "endpoint": endpoint, "state": state, "requests": members.count]
            if let batchID { object["batch_id"] = batchID }
            if let remoteStatus { object["remote_status"] = remoteStatus }
            if let counts { object["request_counts"] = ["total": counts.total, "completed": counts.completed, "failed": counts.failed] }
            return object
        }
    }

    public let groups: [Group]

    /// `live`: the running daemon's status, whose remote batches carry the provider's counts
    /// (the records do not: they are written at each change of state, not at each poll).
    public init(layout: SpoolLayout, live: LiveStatus? = nil) {
        // A view of the spool: no intent folder means no group in the lane.
        let found = (try? RemoteIntentStore(layout: layout).loadAll()) ?? []
        var polled: [String: BackgroundLane.Progress] = [:]
        for progress in live?.remoteBatches ?? [] { polled[progress.group] = progress }
        groups = found.compactMap { entry in
            guard case .intent(let intent) = entry, intent.state != .published else { return nil }
            var group = Group(group: intent.group, endpoint: intent.endpoint, state: intent.state.rawValue, batchID: intent.batchID,
                              remoteStatus: intent.remoteStatus, members: intent.members.map(\.id))
            if let progress = polled[intent.group], let total = progress.total, let completed = progress.completed, let failed = progress.failed {
                group.counts = (total, completed, failed)
                group.remoteStatus = progress.remoteStatus ?? group.remoteStatus
            }
            return group
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
