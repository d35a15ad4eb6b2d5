/// The queue of tasks: which start, in what order, how many at once, and which reports
/// are duplicates. A pure state machine: events in, actions out, no I/O.
///
/// A task's life: `queued` -> `transferring` -> `finishing` -> forgotten. While an id is
/// known, every further report about it (a rescan, a second inotify event, an edit of the
/// file in flight) is a duplicate and is dropped, so an answer is never fetched twice.
public struct Scheduler: Sendable {
    public enum State: Equatable, Sendable {
        case queued
        case transferring
        /// The transfer ended (or never started); its outcome is being written.
        case finishing
    }

    public enum Event: Equatable, Sendable {
        /// Intake found a file.
        case arrived(Intake)
        /// The transfer of `id` ended, however it ended.
        case transferEnded(id: String)
        /// The outcome of `id` is on disk; the task is over.
        case finalized(id: String)
        /// The request file of `id` left `outgoing` without the daemon's doing.
        case requestRemoved(id: String)
        /// Stop starting transfers.
        case drain
    }

    public enum Action: Equatable, Sendable {
        case start(TaskDescriptor)
        case reject(id: String, requestPath: String, problem: RequestProblem)
        /// Abort a running transfer; its outcome is a cancellation.
        case cancelTransfer(id: String)
        /// A queued task was withdrawn before it started.
        case dropQueued(id: String)
    }

    public let concurrency: Int
    public private(set) var states: [String: State] = [:]
    public private(set) var transferring = 0
    private var queue: [TaskDescriptor] = []
    private var queueHead = 0
    private var draining = false

    public init(concurrency: Int) {
        precondition(concurrency > 0, "concurrency must be positive")
        self.concurrency = concurrency
    }

    public var queuedCount: Int { states.values.lazy.filter { $0 == .queued }.count }
    public var isIdle: Bool { states.isEmpty }
    public func state(of id: String) -> State? { states[id] }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .arrived(let intake):
            guard states[intake.id] == nil else { return [] }
            switch intake {
            case .valid(let task):
                states[task.id] = .queued
                queue.append(task)
                return fill()
            case .invalid(let id, let path, let problem):
                states[id] = .finishing
                return [.reject(id: id, requestPath: path, problem: problem)]
            }
        case .transferEnded(let id):
            guard states[id] == .transferring else { return [] }
            states[id] = .finishing
            transferring -= 1
            return fill()
        case .finalized(let id):
            states[id] = nil
            return []
        case .requestRemoved(let id):
            switch states[id] {
            case .queued:
                // The queue entry stays and is skipped when reached: removal from the middle
                // of a large queue would cost a scan.
                states[id] = nil
                return [.dropQueued(id: id)]
            case .transferring:
                return [.cancelTransfer(id: id)]
            case .finishing, nil:
                return []
            }
        case .drain:
            draining = true
            return []
        }
    }

    private mutating func fill() -> [Action] {
        var actions: [Action] = []
        while !draining && transferring < concurrency, let task = popQueued() {
            states[task.id] = .transferring
            transferring += 1
            actions.append(.start(task))
        }
        return actions
    }

    private mutating func popQueued() -> TaskDescriptor? {
        while queueHead < queue.count {
            let task = queue[queueHead]
            queueHead += 1
            if queueHead > 1024 && queueHead * 2 > queue.count {
                queue.removeFirst(queueHead)
                queueHead = 0
            }
            // Skip entries withdrawn while queued (and re-queued copies of the same id).
            if states[task.id] == .queued { return task }
        }
        return nil
    }
}
