import Foundation
import Glibc
import LLMSpoolCore

/// How the client commands find their spool: the same sources as `run` (--spool, then the
/// config from --config, $LLMSPOOL_CONFIG or the default paths, then ./spool), so an
/// installed service needs no --spool on every command.
enum ClientSpool {
    /// The options every client command accepts besides its own.
    static let valued: Set<String> = ["--spool", "--config"]

    /// An id or batch name as given to `show` or `wait`: a name within the spool's folders,
    /// never a path (`../x` read files outside the spool).
    static func name(_ text: String) throws -> String {
        guard !text.isEmpty, text != ".", text != "..", !text.contains("/") else {
            throw Arguments.UsageError(description: "\"\(Logger.escape(text))\" is not a request id or batch name (no \"/\", not . or ..)")
        }
        return text
    }

    static func layout(_ args: Arguments, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> SpoolLayout {
        if let spool = args["--spool"] { return SpoolLayout(root: spool) }
        guard let path = ConfigSource.path(args, environment: environment) else { return SpoolLayout(root: "./spool") }
        do {
            return SpoolLayout(root: try Config.load(path: path).spool)
        } catch {
            throw ConfigError("cannot find the spool through the config \(path): \(error) (or give --spool DIR)")
        }
    }

    /// A spool whose outgoing folder exists, or an error saying how to fix it (or, when this
    /// user may not look into the spool, who may).
    static func existing(_ args: Arguments) throws -> SpoolLayout {
        let layout = try layout(args)
        do {
            _ = try Syscall.lstat(layout.outgoing)
        } catch let error as SystemError where error.errno == EACCES || error.errno == EPERM {
            throw denied(layout.outgoing, error, layout: layout)
        } catch {
            throw ConfigError("\(layout.outgoing) does not exist; give --spool DIR or --config FILE (llmspool init creates a spool)")
        }
        return layout
    }

    /// The same, for commands that read the whole spool (`status`, `queue`, `show`): a folder
    /// this user may not read was counted as empty, and `status` said "daemon: not running,
    /// queued 0" of a spool whose daemon ran with work queued.
    static func readable(_ args: Arguments) throws -> SpoolLayout {
        let layout = try existing(args)
        try checkReadable(layout)
        return layout
    }

    /// Throws when a folder of the spool, or the daemon's status file, is there but this user
    /// may not read it: the folders the commands list, and the files whose absence reads as
    /// "no daemon" or "batch not begun". Anything else is left to the command: a folder
    /// missing (a running daemon makes it again), or made a link or a file (`status` says
    /// the spool is held). Links are not followed.
    static func checkReadable(_ layout: SpoolLayout) throws {
        for folder in [layout.outgoing, layout.hold, layout.state, layout.incoming, layout.failed, layout.batches] {
            try refuseIfDenied(folder, O_DIRECTORY, layout: layout)
        }
        try refuseIfDenied(LiveStatus.path(layout), 0, layout: layout)
    }

    private static func refuseIfDenied(_ path: String, _ flags: Int32, layout: SpoolLayout) throws {
        do {
            _ = try FileDescriptor.open(path, O_RDONLY | flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        } catch let error as SystemError where error.errno == EACCES || error.errno == EPERM {
            throw denied(path, error, layout: layout)
        } catch {
            // Missing, a link, not a folder: the command's own to say.
        }
    }

    private static func denied(_ path: String, _ error: SystemError, layout: SpoolLayout) -> ConfigError {
        ConfigError("cannot read \(Logger.escape(path)) as \(UserDescription.of(getuid())): \(String(cString: strerror(error.errno))); "
                    + "run this as the user the daemon runs as\(owner(of: layout.root, groupMayRead: true)), or as root")
    }

    /// Runs `body`, a change to the spool (`cancel`, `hold`, `release`, `retry`); a change the
    /// spool's permissions refuse is thrown again saying why and who may make it. A member of
    /// the spool's group (`init --group`) may drop requests and read, not manage: the bare
    /// `unlink …: Operation not permitted` said neither.
    static func changing<T>(_ layout: SpoolLayout, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SystemError where (error.errno == EACCES || error.errno == EPERM) && error.path != nil {
            throw ConfigError(deniedChange(error, layout: layout))
        }
    }

    static func deniedChange(_ error: SystemError, layout: SpoolLayout) -> String {
        // A rename's error names both paths: the file moved is the first.
        let paths = (error.path ?? "").components(separatedBy: " -> ")
        let file = paths[0]
        let me = UserDescription.of(getuid())
        let reason = "cannot \(error.call) \(paths.map(Logger.escape).joined(separator: " -> ")): \(String(cString: strerror(error.errno)))"
        let folder = DurableFile.directory(of: file)
        if error.errno == EPERM, let (folderInfo, fileInfo) = ownership(folder: folder, file: file),
           folderInfo.st_mode & S_ISVTX != 0, fileInfo.st_uid != geteuid() {
            return "\(reason); \(Logger.escape(folder)) has the sticky bit and the file belongs to \(UserDescription.of(fileInfo.st_uid)): "
                + "only its owner, the folder's owner (\(UserDescription.of(folderInfo.st_uid))) or root may move or remove it, not \(me)"
        }
        let touched = paths.map(DurableFile.directory(of:)).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        // Only those this user may not change, when any can be told.
        let refusing = touched.filter { access($0, W_OK | X_OK) != 0 }
        let folders = refusing.isEmpty ? touched : refusing
        return "\(reason); \(me) may not change \(folders.map(Logger.escape).joined(separator: " or ")): run this as the user the daemon runs as"
            + "\(owner(of: layout.root, groupMayRead: false)), or as root"
    }

    /// The folder's and the file's `lstat`, or nil when either cannot be looked at (the
    /// refusal is then said without them).
    private static func ownership(folder: String, file: String) -> (stat, stat)? {
        do {
            return (try Syscall.lstat(folder), try Syscall.lstat(file))
        } catch {
            return nil
        }
    }

    /// ` (the spool's owner, uid 0 (root))`, with `, or as a member of its group, gid 50
    /// (staff)` when `groupMayRead` and the group may read it (`init --group`); nothing when
    /// the root cannot be looked at.
    private static func owner(of root: String, groupMayRead: Bool) -> String {
        do {
            let info = try Syscall.lstat(root)
            let group = groupMayRead && info.st_mode & 0o050 == 0o050 ? " or as a member of its group, \(UserDescription.ofGroup(info.st_gid))" : ""
            return " (the spool's owner, \(UserDescription.of(info.st_uid)))\(group)"
        } catch {
            return ""
        }
    }

    /// When a daemon last said it was alive on this spool (its live status file), if ever.
    static func lastSeenDaemon(_ layout: SpoolLayout) -> Date? {
        // No live status file: no daemon was ever seen here.
        guard let info = try? Syscall.lstat(LiveStatus.path(layout)) else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// The warning `submit` prints when nothing has watched the spool for a minute, else nil.
    static func idleWarning(_ layout: SpoolLayout, now: Date = Date()) -> String? {
        if LiveStatus.read(layout, now: now) != nil { return nil }
        if let seen = lastSeenDaemon(layout), now.timeIntervalSince(seen) < 60 { return nil }
        let since = lastSeenDaemon(layout).map { " (none since \(Timestamp.string($0)))" } ?? ""
        return "warning: no daemon has been running on \(layout.root) for a minute\(since); the request waits in \(layout.outgoing) until `llmspool run` watches it"
    }
}
