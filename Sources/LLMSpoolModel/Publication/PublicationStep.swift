/// One step of publishing an outcome. The order of the steps in a plan is what makes a
/// crash between any two of them leave one outcome, never two (see `PublicationPlan`).
public enum PublicationStep: Sendable, Equatable {
    /// fsync a file the attempt wrote (a plain answer's `.partial`, a stream's result temporary).
    case syncFile(String)
    /// Write the task record through a hidden temporary, fsynced when `durable`; with
    /// `resultInodeOf`, the record names that file's inode (the commit point of a success).
    case writeRecord(TaskRecord, durable: Bool, resultInodeOf: String?)
    /// Write bytes through a hidden temporary, fsync, rename onto the path.
    case writeFile(String, [UInt8])
    /// Write the failed lines of a batch's published output (`BatchOutputLine.isFailed`) to
    /// a file through a hidden temporary, fsync, rename; with none, remove that file if
    /// present. Read from the output each time: run again after a crash, the same file.
    case writeFailedLines(from: String, to: String)
    /// Rename a file the daemon owns (its `.partial`, its result temporary).
    case rename(from: String, to: String)
    /// Rename a producer's file, only while it is still the file that was read: a newer
    /// file under the same name is a new task and stays where it is.
    case moveIfSame(from: String, to: String, identity: FileIdentity?)
    /// Unlink a producer's file, only while it is still the file that was read.
    case unlinkIfSame(String, identity: FileIdentity?)
    /// Unlink a file the daemon owns, if present.
    case unlinkIfPresent(String)
    /// Move an earlier outcome at this path aside (into `superseded`), so that nothing is
    /// overwritten.
    case archiveIfPresent(String, into: String)
    /// fsync a folder: the renames and unlinks in it so far become durable.
    case syncFolder(String)
    /// Set the result mark (`ResultMark`) on a file the attempt wrote, before its fsync:
    /// the result then carries its own commit point.
    case markResult(String, ResultMark)
    /// Note, before the commit point, that a hook is owed for this outcome: a small file,
    /// not fsynced, holding the mark of the request the outcome answers (empty when its
    /// identity is unknown), that the hook runner removes once the hook has run and that a
    /// restart finds when the daemon died in between (`HookRecovery`). A note that cannot be
    /// written does not hold the outcome back: the executor reports it and goes on.
    case notePendingHook(String, [UInt8])

    /// The step's name, as logs and tests call it.
    public var kind: String {
        switch self {
        case .syncFile: "sync-file"
        case .writeRecord(let record, _, let inode): inode != nil ? "commit-\(record.status.rawValue)" : "record-\(record.status.rawValue)"
        case .writeFile: "write-file"
        case .writeFailedLines: "write-errors"
        case .rename(_, let to): to.hasSuffix(".sse") ? "keep-events" : "publish"
        case .moveIfSame: "move-request"
        case .unlinkIfSame: "remove-request"
        case .unlinkIfPresent: "remove-partial"
        case .archiveIfPresent: "archive"
        case .syncFolder: "sync-folder"
        case .markResult: "mark-result"
        case .notePendingHook: "note-hook"
        }
    }

    /// The folder fsync shared by a batch, when the step is one.
    var sharedFolder: String? {
        if case .syncFolder(let folder) = self { return folder }
        return nil
    }
}
