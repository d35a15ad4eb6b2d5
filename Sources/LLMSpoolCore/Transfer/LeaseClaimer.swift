import Foundation
import Synchronization

/// Claims requests' leases on a thread of its own, for the event loop: a claim is an
/// exclusive create on the spool's filesystem, quick locally but one round trip on NFS,
/// during which the loop would serve no transfer. Each answer goes back to the loop as a
/// message, in the order the claims were asked.
final class LeaseClaimer: Sendable {
    /// A start the scheduler asked for, waiting for its claim.
    struct Request: Sendable {
        let task: TaskDescriptor
        let purpose: Purpose
    }

    /// What the claim is for.
    enum Purpose: Sendable {
        /// A start on the endpoint of this index.
        case start(endpointIndex: Int)
        /// A hand-over to the background lane: to group on `endpoint`, or (nil) back to
        /// the remote batch the lane resumed for it.
        case lane(endpoint: String?)
    }

    private struct Queue {
        var requests: [Request] = []
        var stopping = false
    }

    private let leases: LeaseManager
    private let answer: @Sendable (Request, LeaseManager.Claim, _ rejoin: Bool) -> Void
    private let member: @Sendable (_ id: String, _ tookOver: Bool) -> RemoteGroupClaims.Member
    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// `answer` is called on the claimer's thread, once for each request submitted before
    /// `stop`; `rejoin` says the request is a member of a remote batch this daemon follows.
    /// `member` judges each claim made against the background lane's groups before it is
    /// answered (`RemoteGroupClaims.Member`).
    init(leases: LeaseManager, member: @escaping @Sendable (_ id: String, _ tookOver: Bool) -> RemoteGroupClaims.Member = { _, _ in .proceed },
         answer: @escaping @Sendable (Request, LeaseManager.Claim, _ rejoin: Bool) -> Void) {
        self.leases = leases
        self.member = member
        self.answer = answer
    }

    func start() {
        NamedThread.start("claims") { [self] in run() }
    }

    /// Asks for a claim (from the loop's thread).
    func submit(_ request: Request) {
        queue.withLock { $0.requests.append(request) }
        wake.signal()
    }

    /// Answers every claim asked so far, then stops the thread; returns once it has.
    func stop() {
        queue.withLock { $0.stopping = true }
        wake.signal()
        stopped.wait()
    }

    private func run() {
        while true {
            wake.wait()
            let (requests, stopping) = queue.withLock { queue -> ([Request], Bool) in
                defer { queue.requests.removeAll() }
                return (queue.requests, queue.stopping)
            }
            for request in requests { claim(request) }
            if stopping { break }
        }
        stopped.signal()
    }

    /// One claim, judged against the background lane's groups before it is answered: a
    /// member of a remote batch (a dead daemon's, adopted first when its claim is free) is
    /// never answered as a plain claim, so it cannot start live nor join a new group.
    private func claim(_ request: Request) {
        let id = request.task.id
        var tookOver = false
        let claim = leases.claim(id, tookOver: &tookOver)
        guard claim == .claimed else {
            answer(request, claim, false)
            return
        }
        // Judged even for a retry, so that a dead daemon's group is adopted; but a member
        // already tried (its batch's outcome was handed over, then retried live) goes on, as
        // after a restart (`Scheduler`'s `laneResumed`): only a first attempt is ever batched.
        let verdict = member(id, tookOver)
        switch request.task.history.attempts.isEmpty ? verdict : .proceed {
        case .proceed:
            answer(request, .claimed, false)
        case .rejoin:
            answer(request, .claimed, true)
        case .leave:
            // Left expired: should the group's follower die before it claims the request,
            // the next claim is a takeover, which looks at `state/remote` again.
            leases.letGo(id)
            answer(request, .heldElsewhere, false)
        }
    }
}
