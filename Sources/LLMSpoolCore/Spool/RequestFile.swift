import Glibc

/// Reads a request from `outgoing` without following links or blocking on FIFOs.
public enum RequestFile {
    /// A request's bytes and the identity of the file they came from.
    public struct Loaded: Sendable {
        public let bytes: [UInt8]
        public let identity: FileIdentity
    }

    /// The file's bytes, or the problem that makes it unsendable. A file that vanished
    /// (already finished or cancelled) is `nil`.
    public static func read(path: String, limit: Int) -> Result<Loaded, RequestProblem>? {
        let fd: Int32
        do {
            fd = try Syscall.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch let error as SystemError {
            if error.errno == ENOENT { return nil }
            if error.errno == ELOOP { return .failure(RequestProblem(.notRegularFile, "the request is a symbolic link; links are never followed")) }
            return .failure(RequestProblem(.unreadable, "cannot open the request: \(error)"))
        } catch {
            return .failure(RequestProblem(.unreadable, "cannot open the request: \(error)"))
        }
        defer { Syscall.close(fd) }
        do {
            let info = try Syscall.fstat(fd, path: path)
            guard info.st_mode & S_IFMT == S_IFREG else {
                return .failure(RequestProblem(.notRegularFile, "the request is not a regular file"))
            }
            if Int(info.st_size) > limit {
                return .failure(RequestProblem(.tooLarge, "the request is \(info.st_size) bytes; the limit is \(limit) (max_request_bytes)"))
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Int(info.st_size))
            try FileReader.forEachChunk(fd: fd, path: path) { chunk in
                if bytes.count + chunk.count > limit {
                    throw RequestProblem(.tooLarge, "the request grew past the limit of \(limit) bytes (max_request_bytes)")
                }
                bytes.append(contentsOf: chunk)
            }
            return .success(Loaded(bytes: bytes, identity: FileIdentity(info)))
        } catch let problem as RequestProblem {
            return .failure(problem)
        } catch {
            return .failure(RequestProblem(.unreadable, "cannot read the request: \(error)"))
        }
    }
}
