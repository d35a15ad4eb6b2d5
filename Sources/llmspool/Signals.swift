import Dispatch
import Glibc
import Synchronization

/// Turns SIGINT and SIGTERM into a wait the main thread can block on (a second one ends
/// the process at once) and SIGHUP into a call of `onHangup`; SIGPIPE is ignored. Keep the instance alive as
/// long as the process runs.
final class Signals: @unchecked Sendable {
    // @unchecked Sendable holds because `sources` is set once in init and never changed;
    // dispatch sources are safe to share, and the rest is atomic or a semaphore.
    private let received = DispatchSemaphore(value: 0)
    private let count = Atomic<Int>(0)
    private let last = Atomic<Int32>(0)
    private let queue = DispatchQueue(label: "llmspool.signals")
    private let sources: [any DispatchSourceSignal]

    init(onHangup: (@Sendable () -> Void)? = nil) {
        // A reader of the log that goes away (`llmspool run 2>&1 | head`, a closed pipe to
        // a collector) must not end the daemon: its writes then fail with EPIPE instead.
        signal(SIGPIPE, SIG_IGN)
        var sources: [any DispatchSourceSignal] = []
        var numbers = [SIGINT, SIGTERM]
        if onHangup != nil { numbers.append(SIGHUP) }
        for number in numbers {
            signal(number, SIG_IGN)
            sources.append(DispatchSource.makeSignalSource(signal: number, queue: queue))
        }
        self.sources = sources
        for (source, number) in zip(sources, numbers) {
            source.setEventHandler { [self] in
                if number == SIGHUP {
                    onHangup?()
                    return
                }
                if count.add(1, ordering: .relaxed).newValue > 1 { _exit(128 + number) }
                last.store(number, ordering: .relaxed)
                received.signal()
            }
            source.resume()
        }
    }

    /// Whether a SIGINT or SIGTERM came: for a wait before `wait()` is reached.
    var stopRequested: Bool { count.load(ordering: .relaxed) > 0 }

    /// Blocks until the first SIGINT or SIGTERM; returns its number.
    func wait() -> Int32 {
        received.wait()
        return last.load(ordering: .relaxed)
    }
}
