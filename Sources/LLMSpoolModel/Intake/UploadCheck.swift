/// Whether the file opened for the upload is still the one intake validated. Postfix's
/// `safe_open` compares `fstat` of the opened file with what `lstat` saw; here the opened
/// descriptor is compared with the identity recorded at intake, so that a request swapped
/// for a hard link to another file is never sent, and one changed after validation is not
/// sent as it is: its new content is a new task for intake. Pure.
public enum UploadCheck {
    public enum Verdict: Sendable, Equatable {
        /// Send it.
        case same
        /// Not sendable as it is now: moved to `failed/` with this problem, never sent.
        case refuse(RequestProblem)
        /// Another file took the name since intake: a new task, judged by intake on its own.
        case replaced
    }

    /// `current` is `fstat` of the descriptor to upload from.
    public static func verify(validated: FileIdentity?, current: FileIdentity, isRegularFile: Bool, links: UInt64) -> Verdict {
        guard isRegularFile else {
            return .refuse(RequestProblem(.notRegularFile, "the request is no longer a regular file"))
        }
        if links > 1 {
            return .refuse(RequestProblem(.hardLink, "the request has \(links) hard links since it was validated; only a file with one name is sent"))
        }
        guard let validated else { return .same }
        // Another file under the name, or this one written again in place (an editor's save,
        // `cp`, `>`): either way not what intake validated, and never sent as it is. The new
        // content is a new task, validated by intake on its own, as a rename would be.
        guard validated.device == current.device, validated.inode == current.inode,
              validated.size == current.size, validated.modifiedNanoseconds == current.modifiedNanoseconds else { return .replaced }
        return .same
    }
}
