/// Which files in `outgoing` a producer still has open for writing, as inotify tells it:
/// a file made or written, and not yet closed. A scan that reads such a file reads a
/// writer's work half done: broken JSON judged invalid once its writer has paused longer
/// than the settle period, or worse, the first half of a prompt file, which is itself a
/// valid prompt and was sent cut. Such a file is read when its writer closes it, or once
/// it has not been written for `grace` seconds (a producer that never closes its file
/// still gets its request sent).
///
/// A file made with `O_TMPFILE` and linked into the folder is closed under the name
/// `#<inode>` (the kernel's name for a file without one), so its inode is kept to match
/// that close to the name it was given.
public struct OpenWriters: Sendable {
    private struct Writer: Sendable {
        var inode: UInt64?
        var lastWrite: Double
    }

    private var writers: [String: Writer] = [:]

    public init() {}

    /// How many files are held open now (for tests and the status).
    public var count: Int { writers.count }

    /// A regular file was made under `name` (IN_CREATE); `inode` as `lstat` saw it.
    public mutating func created(_ name: String, inode: UInt64?, now: Double) {
        writers[name] = Writer(inode: inode, lastWrite: now)
    }

    /// `name` was written (IN_MODIFY): a writer holds it open.
    public mutating func written(_ name: String, now: Double) {
        if writers[name] != nil {
            writers[name]?.lastWrite = now
        } else {
            writers[name] = Writer(inode: nil, lastWrite: now)
        }
    }

    /// A file opened for writing was closed under `name` (IN_CLOSE_WRITE). The name to
    /// read: `name` itself, or for `#<inode>` the name the file was linked in under, if
    /// one is known; nil when `#<inode>` matches none.
    public mutating func closed(_ name: String) -> String? {
        if let inode = OpenWriters.anonymousInode(name) {
            guard let linked = writers.first(where: { $0.value.inode == inode })?.key else { return nil }
            writers[linked] = nil
            return linked
        }
        writers[name] = nil
        return name
    }

    /// `name` left the folder or was replaced by a rename (IN_DELETE, IN_MOVED_FROM,
    /// IN_MOVED_TO): what was known of its writer is void.
    public mutating func forget(_ name: String) {
        writers[name] = nil
    }

    /// Events were lost (a queue overflow, the folder made again): nothing is known.
    public mutating func forgetAll() {
        writers.removeAll()
    }

    /// Until when a read of `name` waits for its writer; nil when it need not wait.
    public func waitUntil(_ name: String, now: Double, grace: Double) -> Double? {
        guard let writer = writers[name] else { return nil }
        let until = writer.lastWrite + grace
        return until > now ? until : nil
    }

    /// The inode in a name of the form `#<digits>`, the kernel's name for a file made with
    /// `O_TMPFILE`; nil for any other name.
    static func anonymousInode(_ name: String) -> UInt64? {
        guard name.first == "#", name.count > 1 else { return nil }
        let digits = name.dropFirst()
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(digits)
    }
}
