import Glibc

/// Finds out once, at start, whether the spool's `incoming` keeps user extended attributes,
/// which the one-fsync commit order needs (`PublicationPlan.CommitOrder.choose`).
public enum ResultMarkProbe {
    public static func run(_ layout: SpoolLayout) -> PublicationPlan.CommitOrder.Probe {
        let path = "\(layout.incoming)/.llmspool-xattr-probe.\(getpid())"
        defer {
            do { try Syscall.unlinkIfPresent(path) } catch {
                // A hidden file is ignored by every reader, and a restart's clean-up removes it.
            }
        }
        do {
            let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: layout.fileMode)
            let mark = Array("probe".utf8)
            do {
                try Syscall.fsetxattr(file.rawValue, ResultMark.attribute, mark, path: path)
            } catch let error as SystemError where error.errno == ENOTSUP || error.errno == EOPNOTSUPP {
                return .unsupported("\(error)")
            }
            guard try Syscall.getxattr(path, ResultMark.attribute, limit: 16) == mark else {
                return .failed("\(path): the attribute read back differs from the one written")
            }
            try file.close()
            return .supported
        } catch {
            return .failed("\(error)")
        }
    }
}
