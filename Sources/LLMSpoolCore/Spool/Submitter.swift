import Glibc

/// Drops a request into `outgoing` the way every producer should: write a dot-file (which
/// the watcher ignores), fsync it, rename it into place, fsync the folder.
public enum Submitter {
    /// Validates and drops `bytes` as request `id`; returns the path it now has. `mode` is
    /// 0640 in a folder a group shares, so that the daemon's group can read the request.
    @discardableResult
    /// `suffix` names the format (`.json`, `.md`); a prompt file is checked with any model,
    /// since the daemon's `default_model` decides one it leaves out.
    public static func submit(_ bytes: [UInt8], id: String, layout: SpoolLayout, mode: mode_t = 0o600,
                              suffix: String = SpoolLayout.requestSuffix) throws -> String {
        guard case .request(let parsed) = RequestName.classify(id + suffix), parsed == id, !id.contains("/"),
              let format = RequestName.format(of: id + suffix)?.format else {
            throw RequestProblem(.unusableName, "\"\(id)\" cannot be used as a request id")
        }
        if case .invalid(let problem) = format.prepare(bytes, context: FormatContext(defaultModel: "-", yaml: LibYAML.reader)) { throw problem }
        let path = "\(layout.outgoing)/\(id)\(suffix)"
        try DurableFile.write(bytes, to: path, mode: mode, syncDirectory: false)
        do {
            try Syscall.fsyncDirectory(layout.outgoing)
        } catch let error as SystemError where error.errno == EACCES || error.errno == EPERM {
            // A drop box this user may write but not read (mode 1733) cannot be opened to be
            // fsynced. The request is in place: said to have failed, it would be dropped
            // again and sent twice. Only its rename may not outlive a power loss.
        }
        return path
    }
}
