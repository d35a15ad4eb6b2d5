/// What a (re)started daemon does first with a group, from its intent record alone. Pure.
public enum RemoteBatchRecovery {
    /// The step that resumes the group's life; nil when it is over (the record goes).
    ///
    /// - `intent`: nothing remote can depend on the group yet (a create needs the file id,
    ///   recorded first), so upload (again: a file uploaded before the crash is orphaned, and
    ///   files cost nothing to keep). Anthropic has no upload: create, once `creating` is
    ///   recorded, which `RemoteBatchMachine` does first.
    /// - `creating` (Anthropic): a create may have been sent and committed: reconcile from
    ///   the list and the results' custom_ids.
    /// - `uploaded`: a create may have been sent and committed: reconcile, list the
    ///   provider's batches and adopt the one carrying the group id; create only without one.
    /// - `created`, `polling`: poll the recorded batch.
    /// - `ended`: download again from the start (a partial download is not trusted).
    /// - `downloaded`: split again (the outcomes are written by rename, idempotently).
    /// - `split`: publish again (each publication plan resumes where it stopped).
    public static func firstStep(of intent: RemoteIntent) -> RemoteBatchMachine.Step? {
        switch intent.state {
        case .intent: intent.api == .anthropic ? .create : .upload
        case .uploaded, .creating: .list(after: nil)
        case .created, .polling: intent.batchID == nil ? .list(after: nil) : .poll
        case .ended: .download(outputFileID: intent.outputFileID, errorFileID: intent.errorFileID)
        case .downloaded: .split
        case .split: .publish
        case .published: nil
        }
    }
}
