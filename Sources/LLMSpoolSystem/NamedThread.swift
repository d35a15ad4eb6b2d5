import CSystem
import Foundation

/// Starts the daemon's threads under names the kernel shows (`top -H`, `perf`, `ps -L`):
/// Foundation's `Thread.name` is not passed on to the kernel on Linux.
public enum NamedThread {
    /// `name` is cut to the kernel's 15 bytes.
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let kernelName = String(decoding: Array(name.utf8.prefix(15)), as: UTF8.self)
        let thread = Thread {
            _ = llms_set_thread_name(kernelName)
            body()
        }
        thread.name = name
        thread.start()
    }
}
