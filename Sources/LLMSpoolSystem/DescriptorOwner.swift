import Synchronization

/// A `FileDescriptor` where a noncopyable value cannot go: inside a copyable, Sendable
/// message (an attempt's outcome, from the event loop to the finisher's threads) or in a
/// collection (the lease keeper's locked descriptors). Taken out at most once, by
/// whichever thread gets there first; closed with the last reference if nobody took it.
///
/// A final class, not a noncopyable struct: the messages that carry it are copied into
/// escaping closures (the worker pool's jobs), which cannot hold a noncopyable value, and
/// Swift 6.3's `Dictionary` and copyable structs cannot hold one either. The class keeps
/// the discipline that matters: the descriptor has one owner at a time, and the compiler
/// checks that the one who took it (a `FileDescriptor`) closes it once.
public final class DescriptorOwner: Sendable {
    private let held: Mutex<FileDescriptor?>
    /// The path it was opened on, for messages; readable without taking the descriptor.
    public let path: String?

    public init(_ descriptor: consuming FileDescriptor) {
        path = descriptor.path
        held = Mutex(Optional(descriptor))
    }

    /// The descriptor, to the first caller only; nil once taken.
    public func take() -> FileDescriptor? {
        held.withLock { $0.take() }
    }

    /// Whether the descriptor is still here, not yet taken.
    public var isHeld: Bool {
        held.withLock { $0 != nil }
    }

    /// At most `limit` bytes from the file's start, read through the descriptor while it is
    /// still here (its offset left alone); nil once taken.
    public func readFromStart(limit: Int) throws -> [UInt8]? {
        try held.withLock { file in
            guard let fd = file?.rawValue else { return nil }
            return try FileReader.prefixFromStart(fd: fd, path: path ?? "a held file", limit: limit)
        }
    }

    /// Holds `descriptor` in place of the one taken (closed if still here): a file's
    /// copy that took over from it.
    public func put(_ descriptor: consuming FileDescriptor) {
        var given: FileDescriptor? = consume descriptor
        held.withLock { $0 = given.take() }
    }

    /// Closes the descriptor now if nobody took it: for a file whose data is not kept.
    public func discard() {
        _ = take()
    }
}
