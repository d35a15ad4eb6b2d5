import CSystem
import Glibc

/// Leaves a file behind when the process dies of a crash (a trap, a bad access, an abort),
/// so that the next run can tell a crash from a `kill -9` or a power loss: only a crash may
/// be the fault of the request that was in flight.
public enum CrashMarker {
    static let signals: [Int32] = [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT]
    nonisolated(unsafe) static var path: UnsafeMutablePointer<CChar>?
    /// The handlers that were there before (Swift's backtracer), by signal number.
    nonisolated(unsafe) static var previous: UnsafeMutablePointer<sigaction>?

    /// Installs the handlers; each creates `markerPath`, then hands the signal to the
    /// handler that was there before, which ends the process as it would have.
    public static func install(markerPath: String) {
        path = strdup(markerPath)
        let table = UnsafeMutablePointer<sigaction>.allocate(capacity: 64)
        table.initialize(repeating: sigaction(), count: 64)
        previous = table
        // A parent may have left these blocked (a test runner does): a `kill -ABRT` would
        // then wait for ever, unseen.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        for signal in signals { sigaddset(&unblocked, signal) }
        _ = pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = { signal, info, _ in
                if llms_signal_from_outside(info) != 0 {
                    // Sent by someone (`kill -ABRT` for a core dump): no fault of a request's.
                    // The default action ends the process, as the sender asked.
                    _ = Glibc.signal(signal, SIG_DFL)
                    _ = raise(signal)
                    return
                }
                if let path = CrashMarker.path {
                    // Raw open and close: only async-signal-safe calls belong in a handler.
                    let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
                    if fd >= 0 { close(fd) }
                }
                if let previous = CrashMarker.previous {
                    _ = sigaction(signal, previous + Int(signal), nil)
                }
                // Blocked while this handler runs: delivered to the previous handler on return.
                _ = raise(signal)
            }
            action.sa_flags = SA_SIGINFO
            sigemptyset(&action.sa_mask)
            _ = sigaction(signal, &action, table + Int(signal))
        }
    }

    /// Whether the previous run died of a crash; the marker stays.
    public static func isPresent(markerPath: String) -> Bool {
        access(markerPath, F_OK) == 0
    }

    /// Whether the previous run died of a crash; the marker is removed.
    public static func consume(markerPath: String) -> Bool {
        guard access(markerPath, F_OK) == 0 else { return false }
        _ = unlink(markerPath)
        return true
    }
}
