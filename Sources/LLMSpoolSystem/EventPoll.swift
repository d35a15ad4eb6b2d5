import CSystem
import Glibc

/// The event loop's epoll set and its wake-up eventfd: each wake-up touches only the
/// descriptors that are ready, whatever the number of connections.
public final class EventPoll {
    /// One ready descriptor.
    public struct Ready {
        /// A socket libcurl owns and closes: epoll only reports its number, so it stays raw.
        public var fd: Int32
        public var readable: Bool
        public var writable: Bool
        public var failed: Bool
    }

    /// The epoll set.
    private let pollSet: FileDescriptor
    /// Written by other threads to wake the loop.
    private let wakeEvent: FileDescriptor
    /// Filled by epoll_wait with the numbers of ready sockets that libcurl owns: raw by nature.
    private var fds = [Int32](repeating: 0, count: 256)
    private var masks = [UInt32](repeating: 0, count: 256)

    public init() throws {
        let poll = llms_epoll_create()
        guard poll >= 0 else { throw SystemError(errno: errno, call: "epoll_create1", path: nil) }
        let pollSet = FileDescriptor(owning: poll)
        let wake = llms_eventfd()
        guard wake >= 0 else { throw SystemError(errno: errno, call: "eventfd", path: nil) }
        self.pollSet = pollSet
        wakeEvent = FileDescriptor(owning: wake)
        // A failure here leaves an initialised object whose two descriptors close with it.
        try watch(wake, readable: true, writable: false, known: false)
    }

    /// Adds `socket` to the set or changes what it is watched for. `known` says which of
    /// the two is likely; the other is tried if the kernel disagrees (a closed descriptor
    /// leaves the set by itself, and its number may come back for a new socket).
    public func watch(_ socket: Int32, readable: Bool, writable: Bool, known: Bool) throws {
        let mask = (readable ? llms_epoll_in : 0) | (writable ? llms_epoll_out : 0)
        var operation = known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD
        for _ in 0..<2 {
            if llms_epoll_control(pollSet.rawValue, operation, socket, mask) == 0 { return }
            let code = errno
            if code == ENOENT && operation == EPOLL_CTL_MOD {
                operation = EPOLL_CTL_ADD
            } else if code == EEXIST && operation == EPOLL_CTL_ADD {
                operation = EPOLL_CTL_MOD
            } else {
                throw SystemError(errno: code, call: "epoll_ctl", path: nil)
            }
        }
    }

    /// Stops watching `socket`; one already closed has left the set by itself.
    public func forget(_ socket: Int32) {
        _ = llms_epoll_control(pollSet.rawValue, EPOLL_CTL_DEL, socket, 0)
    }

    /// Wakes the loop from any thread.
    public func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeEvent.rawValue, &one, 8)
    }

    /// Waits up to `timeoutMilliseconds` for a wake-up alone, the sockets left to gather
    /// events: the loop's pause between turns, cut short by a message. The wake-up is left
    /// for `wait` to consume. An interrupted wait (EINTR) simply ends early.
    public func waitForWake(timeoutMilliseconds: Int32) {
        var entry = pollfd(fd: wakeEvent.rawValue, events: Int16(POLLIN), revents: 0)
        _ = Glibc.poll(&entry, 1, timeoutMilliseconds)
    }

    /// Waits up to `timeoutMilliseconds` and calls `body` for each ready socket; a wake-up
    /// is consumed here. Returns whether the loop was woken.
    public func wait(timeoutMilliseconds: Int32, _ body: (Ready) -> Void) -> Bool {
        let count = fds.withUnsafeMutableBufferPointer { fdBuffer in
            masks.withUnsafeMutableBufferPointer { maskBuffer in
                // The buffers are C arrays the kernel fills: a C call's arguments, raw by nature.
                llms_epoll_wait(pollSet.rawValue, fdBuffer.baseAddress, maskBuffer.baseAddress, Int32(fdBuffer.count), timeoutMilliseconds)
            }
        }
        var woken = false
        guard count > 0 else { return false }  // a timeout, or EINTR: the loop simply goes round
        for index in 0..<Int(count) {
            let ready = fds[index]
            let mask = masks[index]
            if ready == wakeEvent.rawValue {
                var value: UInt64 = 0
                _ = Glibc.read(wakeEvent.rawValue, &value, 8)
                woken = true
                continue
            }
            body(Ready(fd: ready, readable: mask & llms_epoll_in != 0, writable: mask & llms_epoll_out != 0,
                       failed: mask & (llms_epoll_err | llms_epoll_hup) != 0))
        }
        return woken
    }
}
