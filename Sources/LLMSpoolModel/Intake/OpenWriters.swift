/// Which files in `outgoing` a producer still has open for writing, as inotify tells it:
/// a file made or written, and not yet closed. A scan that reads such a file reads a
/// writer's work half done: broken JSON judged invalid once its writer has paused longer
/// than the settle period, or worse, the first half of a prompt file, which is itself a
/// valid prompt and was sent cut. Such a file is read when its writer closes it, or once
/// it has not been written for `grace` seconds (a producer that never closes its file
/// still gets its request sent).
///
/// A file made with `O_TMPFILE` and linked into the folder is written and closed under the
/// name `#<inode>` (the kernel's name for a file without one), so its inode is kept to
/// match those events to the name it was given.
public struct OpenWriters: Sendable {
    /// How long a file held open goes unread after its last write: long enough for a
    /// producer that pauses (a slow pipe, a busy machine), short enough that one that never
    /// closes its file (a script that forgets to) is not kept waiting much longer than the
    /// periodic rescan did before.
    public static let defaultGraceSeconds = 60.0

    private struct Writer: Sendable {
        var inode: UInt64?
        var lastWrite: Double
    }

    private var writers: [String: Writer] = [:]
    /// Files a producer made under a name of the form `#<digits>`, by when: their closes are
    /// their own, not an `O_TMPFILE` file's (a producer could otherwise name a file after
    /// another request's inode and have that one read before its writer is done).
    private var madeUnderAnonymousNames: [String: Double] = [:]
    /// A writer whose file was renamed away (IN_MOVED_FROM), kept for the IN_MOVED_TO of
    /// the same rename (its cookie) that names it again.
    private var departed: (cookie: UInt32, writer: Writer)?

    public init() {}

    /// How many files are tracked now.
    public var count: Int { writers.count }

    /// A regular file was made under `name` (IN_CREATE); `inode` as `lstat` saw it.
    public mutating func created(_ name: String, inode: UInt64?, now: Double) {
        writers[name] = Writer(inode: inode, lastWrite: now)
        if OpenWriters.anonymousInode(name) != nil { madeUnderAnonymousNames[name] = now }
    }

    /// `name` was written (IN_MODIFY): a writer holds it open. `#<inode>` refreshes the
    /// file linked in under another name, and is dropped when none is known.
    public mutating func written(_ name: String, now: Double) {
        if let inode = OpenWriters.anonymousInode(name) {
            guard let linked = writers.first(where: { $0.value.inode == inode })?.key else { return }
            writers[linked]?.lastWrite = now
        } else if writers[name] != nil {
            writers[name]?.lastWrite = now
        } else {
            writers[name] = Writer(inode: nil, lastWrite: now)
        }
    }

    /// A file opened for writing was closed under `name` (IN_CLOSE_WRITE). The name to
    /// read: `name` itself, or for `#<inode>` the name the file was linked in under, if
    /// one is known; nil when `#<inode>` matches none.
    public mutating func closed(_ name: String) -> String? {
        if let inode = OpenWriters.anonymousInode(name), madeUnderAnonymousNames[name] == nil {
            guard let linked = writers.first(where: { $0.value.inode == inode })?.key else { return nil }
            writers[linked] = nil
            return linked
        }
        writers[name] = nil
        return name
    }

    /// `name` was renamed away (IN_MOVED_FROM, with the rename's cookie): its writer, if any,
    /// goes with it to the name of the IN_MOVED_TO with the same cookie.
    public mutating func movedAway(_ name: String, cookie: UInt32) {
        departed = writers.removeValue(forKey: name).map { (cookie, $0) }
    }

    /// A file was renamed to `name` (IN_MOVED_TO): whatever was known under that name is
    /// void, and a file still open that was renamed within the folder keeps its writer.
    public mutating func movedHere(_ name: String, cookie: UInt32) {
        if let departed, departed.cookie == cookie {
            writers[name] = departed.writer
        } else {
            writers[name] = nil
        }
        departed = nil
    }

    /// `name` left the folder (IN_DELETE): what was known of its writer is void.
    public mutating func forget(_ name: String) {
        writers[name] = nil
    }

    /// The folder was lost (removed, moved, unmounted): its names are gone.
    public mutating func forgetAll() {
        writers.removeAll()
        madeUnderAnonymousNames.removeAll()
        departed = nil
    }

    /// Until when a read of `name` waits for its writer; nil when it need not wait.
    public func waitUntil(_ name: String, now: Double, grace: Double) -> Double? {
        guard let writer = writers[name] else { return nil }
        let until = writer.lastWrite + grace
        return until > now ? until : nil
    }

    /// Whether a writer of `name` was seen and never seen to close it.
    public func isTracked(_ name: String) -> Bool {
        writers[name] != nil
    }

    /// Drops the writers past their grace: a close lost with an overflowed queue would
    /// otherwise keep its entry for ever.
    public mutating func prune(now: Double, grace: Double) {
        writers = writers.filter { $0.value.lastWrite + grace > now }
        madeUnderAnonymousNames = madeUnderAnonymousNames.filter { $0.value + grace > now }
    }

    /// The inode in a name of the form `#<digits>`, the kernel's name for a file made with
    /// `O_TMPFILE`; nil for any other name.
    public static func anonymousInode(_ name: String) -> UInt64? {
        guard name.first == "#", name.count > 1 else { return nil }
        let digits = name.dropFirst()
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(digits)
    }
}
