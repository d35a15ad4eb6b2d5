import Glibc

/// Finds out once, at start, whether the spool's `incoming` keeps user extended attributes,
/// which the one-fsync commit order needs (`PublicationPlan.CommitOrder.choose`).
public enum ResultMarkProbe {
    public static func run(_ layout: SpoolLayout) -> PublicationPlan.CommitOrder.Probe {
        let path = "\(layout.incoming)/.llmspool-xattr-probe.\(getpid())"
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: layout.fileMode)
        } catch {
            return .failed("\(error)")
        }
        let probe = check(file.rawValue, path: path)
        // Removed while still open, then closed: a close followed at once by the unlink left
        // it on sshfs as `incoming/.fuse_hidden*` now and then, at every start of every
        // daemon there (`FileDescriptor.unlinkThenClose`).
        do {
            try file.unlinkThenClose(path)
        } catch {
            // A hidden file is ignored by every reader, and a restart's clean-up removes it.
        }
        return probe
    }

    /// Sets the mark on the open file and reads it back by name.
    private static func check(_ fd: Int32, path: String) -> PublicationPlan.CommitOrder.Probe {
        let mark = Array("probe".utf8)
        do {
            do {
                try Syscall.fsetxattr(fd, ResultMark.attribute, mark, path: path)
            } catch let error as SystemError where error.errno == ENOTSUP || error.errno == EOPNOTSUPP {
                return .unsupported("\(error)")
            }
            guard try Syscall.getxattr(path, ResultMark.attribute, limit: 16) == mark else {
                return .failed("\(path): the attribute read back differs from the one written")
            }
            return .supported
        } catch {
            return .failed("\(error)")
        }
    }
}
