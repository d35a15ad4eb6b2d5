import Glibc

/// Drops a request into `outgoing` the way every producer should: write a dot-file (which
/// the watcher ignores), fsync it, rename it into place, fsync the folder.
public enum Submitter {
    /// Validates and drops `bytes` as request `id`; returns the path it now has. `mode` is
    /// 0640 in a folder a group shares, so that the daemon's group can read the request.
    @discardableResult
    public static func submit(_ bytes: [UInt8], id: String, layout: SpoolLayout, mode: mode_t = 0o600) throws -> String {
        guard case .request(let parsed) = RequestName.classify(id + SpoolLayout.requestSuffix), parsed == id, !id.contains("/") else {
            throw RequestProblem(.unusableName, "\"\(id)\" cannot be used as a request id")
        }
        if case .failure(let problem) = RequestValidator.validate(bytes) { throw problem }
        let path = layout.request(id)
        try DurableFile.write(bytes, to: path, mode: mode)
        return path
    }
}
