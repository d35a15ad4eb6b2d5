import LLMSpoolCore
import CMicroHTTPD
import Foundation
import Synchronization

/// The stub's one timer: connections suspended while they wait (a header delay, a token
/// delay, a stall) are resumed here when their wait is over, so that one polling thread
/// serves every connection and none needs a thread to sleep on.
final class ResumeTimer: Sendable {
    private struct Entry: Sendable {
        var due: Double
        var order: UInt64
        /// The `MHD_Connection`, as a bit pattern: resumed from this thread, which
        /// libmicrohttpd allows with `MHD_ALLOW_SUSPEND_RESUME`.
        var connection: UInt
    }

    private struct State: Sendable {
        var heap = MinHeap<Entry>(by: { $0.due < $1.due || ($0.due == $1.due && $0.order < $1.order) })
        var order: UInt64 = 0
        var stopping = false
    }

    private let state = Mutex(State())
    private let changed = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    init() {
        NamedThread.start("stub.timer") { [self] in run() }
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Resumes `connection`, which the caller has just suspended, after `milliseconds`.
    func resume(_ connection: OpaquePointer, after milliseconds: Int) {
        let due = ResumeTimer.now() + Double(milliseconds) / 1000
        let earliest = state.withLock { state -> Bool in
            state.order += 1
            state.heap.push(Entry(due: due, order: state.order, connection: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))))
            return state.heap.min?.order == state.order
        }
        if earliest { changed.signal() }
    }

    /// Resumes every waiting connection now and ends the thread: libmicrohttpd must not
    /// be stopped with connections suspended.
    func stop() {
        state.withLock { $0.stopping = true }
        changed.signal()
        stopped.wait()
    }

    private func run() {
        while true {
            var due: [UInt] = []
            let (wait, stopping) = state.withLock { state -> (Double?, Bool) in
                let now = ResumeTimer.now()
                while let first = state.heap.min, first.due <= now || state.stopping {
                    due.append(first.connection)
                    _ = state.heap.pop()
                }
                return (state.heap.min.map { $0.due - now }, state.stopping)
            }
            for connection in due {
                if let pointer = OpaquePointer(bitPattern: connection) { MHD_resume_connection(pointer) }
            }
            if stopping {
                stopped.signal()
                return
            }
            if let wait {
                _ = changed.wait(timeout: .now() + .nanoseconds(Int(max(0, wait) * 1e9)))
            } else {
                changed.wait()
            }
        }
    }
}
