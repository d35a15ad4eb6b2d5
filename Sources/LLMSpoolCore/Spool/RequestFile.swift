import Glibc

/// Reads a request from `outgoing` without following links or blocking on FIFOs.
public enum RequestFile {
    /// A request's bytes and the identity of the file they came from.
    public struct Loaded: Sendable {
        public let bytes: [UInt8]
        public let identity: FileIdentity
    }

    /// The file's bytes, or the problem that makes it unsendable. A file that vanished
    /// (already finished or cancelled) is `nil`: `ENOENT`, and `ESTALE`, which a network
    /// filesystem answers for a file another client removed while this one's cache still
    /// knew it. Neither ever makes a request invalid.
    ///
    /// Postfix's `safe_open`: `lstat` first, so that a link, a FIFO, a socket, a device or
    /// a folder is never opened at all; a file with more than one link is refused (it could
    /// be a name for a file its owner never meant to send); then `open` without following
    /// links and without blocking, and the opened file must be the one `lstat` saw.
    /// `seen` is what `lstat` said of `path` just now, when the caller looked already.
    public static func read(path: String, limit: Int, seen looked: stat? = nil) -> Result<Loaded, RequestProblem>? {
        let seen: stat
        do {
            seen = try looked ?? Syscall.lstat(path)
        } catch let error as SystemError where isGone(error.errno) {
            return nil
        } catch let error as SystemError where error.isTransient {
            return .failure(RequestProblem(.transient, "cannot look at the request now: \(error)"))
        } catch {
            return .failure(RequestProblem(.unreadable, "cannot look at the request: \(error)"))
        }
        if let problem = problem(with: seen) { return .failure(problem) }
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        } catch let error as SystemError {
            if isGone(error.errno) { return nil }
            if error.errno == ELOOP { return .failure(RequestProblem(.notRegularFile, "the request is a symbolic link; links are never followed")) }
            if error.isTransient { return .failure(RequestProblem(.transient, "cannot open the request now: \(error)")) }
            return .failure(RequestProblem(.unreadable, "cannot open the request: \(error)"))
        } catch {
            return .failure(RequestProblem(.unreadable, "cannot open the request: \(error)"))
        }
        do {
            let info = try file.fstat()
            guard info.st_dev == seen.st_dev && info.st_ino == seen.st_ino else {
                return .failure(RequestProblem(.notRegularFile, "the request was replaced while it was being opened"))
            }
            if let problem = problem(with: info) { return .failure(problem) }
            if Int(info.st_size) > limit {
                return .failure(RequestProblem(.tooLarge, "the request is \(info.st_size) bytes; the limit is \(limit) (max_request_bytes)"))
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Int(info.st_size))
            try FileReader.forEachChunk(fd: file.rawValue, path: path) { chunk in
                if bytes.count + chunk.count > limit {
                    throw RequestProblem(.tooLarge, "the request grew past the limit of \(limit) bytes (max_request_bytes)")
                }
                bytes.append(contentsOf: chunk)
            }
            let identity = FileIdentity(info).with(bornNanoseconds: FileIdentity.birthTime(fd: file.rawValue)).with(contentHash: Fingerprint.hash(bytes))
            return .success(Loaded(bytes: bytes, identity: identity))
        } catch let problem as RequestProblem {
            return .failure(problem)
        } catch let error as SystemError where isGone(error.errno) {
            return nil
        } catch let error as SystemError where error.isTransient {
            return .failure(RequestProblem(.transient, "cannot read the request now: \(error)"))
        } catch {
            return .failure(RequestProblem(.unreadable, "cannot read the request: \(error)"))
        }
    }

    /// The errors that mean the request is no longer there.
    public static func isGone(_ code: Int32) -> Bool {
        code == ENOENT || code == ESTALE
    }

    /// What is wrong with a file of this kind, if anything.
    static func problem(with info: stat) -> RequestProblem? {
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            if info.st_nlink > 1 {
                return RequestProblem(.hardLink, "the request has \(info.st_nlink) hard links; only a file with one name is read")
            }
            return nil
        case S_IFLNK: return RequestProblem(.notRegularFile, "the request is a symbolic link; links are never followed")
        case S_IFIFO: return RequestProblem(.notRegularFile, "the request is a FIFO, not a regular file")
        case S_IFSOCK: return RequestProblem(.notRegularFile, "the request is a socket, not a regular file")
        case S_IFCHR, S_IFBLK: return RequestProblem(.notRegularFile, "the request is a device node, not a regular file")
        case S_IFDIR: return RequestProblem(.notRegularFile, "the request is a folder; folders in outgoing are never read")
        default: return RequestProblem(.notRegularFile, "the request is not a regular file")
        }
    }
}
