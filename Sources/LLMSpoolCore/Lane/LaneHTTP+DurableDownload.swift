import Glibc
import LLMSpoolSystem

/// A remote batch's output fetched into a file of the lane's own, both providers' way.
extension LaneHTTP {
    /// Creates (or empties) `path`, lets `fetch` stream the remote file into it, and fsyncs
    /// it; nil once it is whole on disk, else the event that says why not (a failure of the
    /// local file is retried like the read). `group` names the pause point the kill tests use;
    /// `members`, the group's size, bounds the file (`Settings.answerBytesPerMember` each).
    func downloadDurably(to path: String, mode: mode_t, group: String, members: Int, logger: Logger,
                         _ fetch: (borrowing FileDescriptor) -> RemoteBatchMachine.Event?) -> RemoteBatchMachine.Event? {
        let (limit, overflow) = Int64(max(1, members)).multipliedReportingOverflow(by: settings.answerBytesPerMember)
        fileLimit = overflow ? .max : limit
        defer { fileLimit = .max }
        do {
            let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
            if LaneTestPause.isSet("downloading") { midFile = { LaneTestPause.at("downloading", group: group, logger: logger) } }
            defer { midFile = nil }
            if let failure = fetch(fd) { return failure }
            try fd.fsync()
        } catch {
            return .failed(retryable: true, retryAfter: nil, message: "the download to \(path) failed: \(error)")
        }
        return nil
    }
}
