import Glibc

/// Reads the mark a result carries (`ResultMark`), for the restart decision. A result
/// without one (written in the record-first order, or by an older daemon) proves nothing
/// by itself; neither does a mark that cannot be read or parsed, which is logged.
public enum ResultMarkReader {
    public static func read(_ path: String, id: String, logger: Logger) -> ResultMark? {
        let bytes: [UInt8]?
        do {
            bytes = try Syscall.getxattr(path, ResultMark.attribute, limit: ResultMark.maximumSize)
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ENOTSUP || error.errno == EOPNOTSUPP {
            return nil
        } catch {
            logger.warning("cannot read the result's mark; the restart decision goes without it", id: id, ["reason": "\(error)"])
            return nil
        }
        guard let bytes else { return nil }
        switch ResultMark.parse(bytes) {
        case .success(let mark):
            return mark
        case .failure(let problem):
            logger.warning("the result's mark is unusable; the restart decision goes without it", id: id,
                           ["path": LogValue(path), "problem": LogValue(problem.description)])
            return nil
        }
    }
}
