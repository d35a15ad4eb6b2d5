import Foundation
import Synchronization

/// A few named threads for blocking work (fsync, rename, records) so that the event loop
/// never waits on the disk. Jobs run in submission order.
public final class WorkerPool: Sendable {
    private enum Job {
        case run(@Sendable () -> Void)
        case stop
    }

    private struct Queue {
        var jobs: [Job] = []
        var head = 0

        mutating func pop() -> Job? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            return job
        }
    }

    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let threadCount: Int

    public init(name: String, threads: Int) {
        threadCount = threads
        for index in 0..<threads {
            NamedThread.start("\(name).\(index)") { [self] in work() }
        }
    }

    public func submit(_ job: @escaping @Sendable () -> Void) {
        enqueue(.run(job))
    }

    /// Runs every job submitted so far, then stops the threads and returns.
    public func finish() {
        for _ in 0..<threadCount { enqueue(.stop) }
        for _ in 0..<threadCount { stopped.wait() }
    }

    private func enqueue(_ job: Job) {
        queue.withLock { $0.jobs.append(job) }
        available.signal()
    }

    private func work() {
        while true {
            available.wait()
            guard let job = queue.withLock({ $0.pop() }) else { continue }
            switch job {
            case .run(let body): body()
            case .stop:
                stopped.signal()
                return
            }
        }
    }
}
