import Glibc

/// A failed system call: the errno, the call's name and the path it acted on.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let errno: Int32
    public let call: String
    public let path: String?

    public init(errno: Int32, call: String, path: String?) {
        self.errno = errno
        self.call = call
        self.path = path
    }

    /// True when the filesystem is out of space or quota: the caller should keep the
    /// request and try later rather than fail it.
    public var isOutOfSpace: Bool { errno == ENOSPC || errno == EDQUOT }

    /// The machine is short of something (descriptors, memory, space): the same call may
    /// work later, and the file it named is not to blame.
    public var isTransient: Bool {
        [EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS, EINTR, ENOSPC, EDQUOT, EIO].contains(errno)
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(call) \(path): \(reason) (errno \(errno))" }
        return "\(call): \(reason) (errno \(errno))"
    }
}
