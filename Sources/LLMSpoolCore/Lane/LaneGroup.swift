import Foundation

/// One group of the background lane as its thread holds it: the remote batch's state
/// machine, the members as the scheduler handed them over, and when its next step is due.
struct LaneGroup {
    var machine: RemoteBatchMachine
    /// The members at hand (a batch's lines held by their offsets); after a restart they
    /// arrive again as the watcher finds their files.
    var held: [String: LaneMember] = [:]
    /// Each member's input line size, measured when it joined (fresh groups only).
    var sizes: [String: Int] = [:]
    var next: RemoteBatchMachine.Step?
    var due = 0.0
    /// A record whose write failed: written before anything else happens to the group.
    var unrecorded: RemoteIntent?
    var index: LaneOutputIndex?
    /// What the last poll said: the remote batch's counts, for `status` and the metrics.
    var lastPoll: RemoteBatchStatus?
    /// Members whose outcome is handed to the finisher (or found handed before a restart).
    var ended: Set<String> = []
    /// Members whose request was deleted after the group was sent.
    var deleted: Set<String> = []
    var startedAt: Date

    var id: String { machine.intent.group }
}
