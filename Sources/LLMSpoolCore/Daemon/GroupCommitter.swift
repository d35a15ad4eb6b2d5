import Foundation
import Synchronization

/// The thread that publishes prepared successes in batches: whatever is ready when it
/// wakes is committed together, sharing the folder fsyncs. While one batch commits the
/// next gathers, so batches grow with the load and a lone result waits for nobody.
public final class GroupCommitter: Sendable {
    private struct State {
        var waiting: [Finisher.PreparedSuccess] = []
        var stopping = false
    }

    /// Largest batch: bounds the time from a result's fsync to its publication under load.
    public static let batchLimit = 1024

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    public init(finisher: Finisher, post: @escaping @Sendable (Scheduler.Event) -> Void) {
        NamedThread.start("commit") { [self] in run(finisher: finisher, post: post) }
    }

    public func submit(_ prepared: Finisher.PreparedSuccess) {
        state.withLock { $0.waiting.append(prepared) }
        available.signal()
    }

    /// Commits everything submitted so far, then stops the thread and returns.
    public func finish() {
        state.withLock { $0.stopping = true }
        available.signal()
        stopped.wait()
    }

    private func run(finisher: Finisher, post: @Sendable (Scheduler.Event) -> Void) {
        while true {
            available.wait()
            while true {
                let (batch, stopping) = state.withLock { state -> ([Finisher.PreparedSuccess], Bool) in
                    let count = min(state.waiting.count, GroupCommitter.batchLimit)
                    let batch = Array(state.waiting.prefix(count))
                    state.waiting.removeFirst(count)
                    return (batch, state.stopping && state.waiting.isEmpty)
                }
                if !batch.isEmpty {
                    for event in finisher.commit(batch) { post(event) }
                }
                if stopping {
                    stopped.signal()
                    return
                }
                if batch.isEmpty { break }
            }
        }
    }
}
