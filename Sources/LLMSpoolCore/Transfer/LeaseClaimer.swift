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
    private let answer: @Sendable (Request, LeaseManager.Claim) -> Void
    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// `answer` is called on the claimer's thread, once for each request submitted before `stop`.
    init(leases: LeaseManager, answer: @escaping @Sendable (Request, LeaseManager.Claim) -> Void) {
        self.leases = leases
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
            for request in requests { answer(request, leases.claim(request.task.id)) }
            if stopping { break }
        }
        stopped.signal()
    }
}
