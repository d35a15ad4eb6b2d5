import Glibc

extension Syscall {
    /// `waitpid`: the pid that changed state (0 with WNOHANG when none did) and its status.
    public static func waitpid(_ pid: pid_t, options: Int32) throws -> (pid: pid_t, status: Int32) {
        var status: Int32 = 0
        let changed = try retrying("waitpid", nil) { Glibc.waitpid(pid, &status, options) }
        return (changed, status)
    }

    /// A pipe whose ends are closed on exec; the read end does not block.
    public static func nonBlockingPipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        _ = try retrying("pipe", nil) { Glibc.pipe(&ends) }
        let flags = fcntl(ends[0], F_GETFL)
        guard flags >= 0, fcntl(ends[0], F_SETFL, flags | O_NONBLOCK) == 0,
              fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0 else {
            let code = Glibc.errno
            close(ends[0])
            close(ends[1])
            throw SystemError(errno: code, call: "fcntl", path: nil)
        }
        return (ends[0], ends[1])
    }
}
