/// What a start does with a hook noted as owed (`state/hooks/<id>@<inode>`) by a daemon that
/// died before the hook had run. The note is written just before the outcome's commit point
/// and removed once the hook has run, and it holds the mark of the request the outcome
/// answers: a note means the outcome may be published and its hook has not run to its end,
/// and the mark tells that outcome from an older or newer one of the same id. Pure.
public enum HookRecovery {
    /// The decision for one note.
    public enum Decision: Sendable, Equatable {
        /// Run `on_complete` for the result in `incoming`, then remove the note.
        case runOnComplete
        /// Run `on_failure` for the error record in `failed`, then remove the note.
        case runOnFailure
        /// The failure is committed (the task record says so, for the note's request) but
        /// its error record was never written and the request is gone (deleted while
        /// `failed/` could not be written): write the record from the task record, then run
        /// `on_failure`; while the write fails, the note stays.
        case writeErrorRecordThenRunOnFailure
        /// Leave the note: its request is still in `outgoing`, and the daemon will either
        /// finish its clean-up (which reports the outcome and runs the hook) or send it
        /// again (whose outcome notes its own).
        case leaveToTheRequest
        /// Remove the note: nothing proves its outcome was published (the daemon died
        /// before the commit point, and the request was withdrawn since), so no hook is owed.
        case drop
    }

    /// What the spool holds for a note's id now.
    public struct Found: Sendable, Equatable {
        /// The request file now in `outgoing` under the id, if any.
        public var queued: FileIdentity?
        /// The task record, if any.
        public var record: TaskRecord?
        /// The result in `incoming`: its inode and its mark, if any.
        public var resultInode: UInt64?
        public var resultMark: ResultMark?
        /// The request file in `failed` under the id (a failure moves it there), if any.
        public var failedRequest: FileIdentity?
        public var errorRecordExists: Bool

        public init(queued: FileIdentity? = nil, record: TaskRecord? = nil, resultInode: UInt64? = nil, resultMark: ResultMark? = nil,
                    failedRequest: FileIdentity? = nil, errorRecordExists: Bool = false) {
            self.queued = queued
            self.record = record
            self.resultInode = resultInode
            self.resultMark = resultMark
            self.failedRequest = failedRequest
            self.errorRecordExists = errorRecordExists
        }
    }

    /// The decision for a note of `id` holding `note` (nil: the request's identity was not
    /// known, and the outcome is judged by the files' presence alone). A success is proven by
    /// the result's mark naming the note's request, or by a done record of that request
    /// naming the result's inode; a failure by the error record beside the request itself,
    /// moved to `failed` (a rename keeps its identity).
    public static func decide(id: String, note: ResultMark?, found: Found) -> Decision {
        guard let note else {
            if found.queued != nil { return .leaveToTheRequest }
            if found.resultInode != nil { return .runOnComplete }
            return found.errorRecordExists ? .runOnFailure : .drop
        }
        let request = note.request
        if let queued = found.queued, queued.isSameInstance(as: request) { return .leaveToTheRequest }
        let marked = found.resultInode != nil && found.resultMark?.proves(id: id, identity: request) == true
        let recorded = found.record.map { record in
            record.status == .done && record.request?.isSameInstance(as: request) == true
                && record.resultInode != nil && record.resultInode == found.resultInode
        } ?? false
        if marked || recorded { return .runOnComplete }
        if found.errorRecordExists, let failed = found.failedRequest, failed.isSameInstance(as: request) { return .runOnFailure }
        if let record = found.record, record.status == .failed, record.errorRecordOwed, record.errorRecord != nil,
           record.request?.isSameInstance(as: request) == true, found.failedRequest == nil {
            return found.errorRecordExists ? .runOnFailure : .writeErrorRecordThenRunOnFailure
        }
        return .drop
    }

    /// The decision for a batch file's note.
    public enum BatchDecision: Sendable, Equatable {
        /// Run the batch's hook with the counts of its summary (`incoming/<name>.batch.json`).
        case runFromSummary
        /// Run `on_failure` for a batch refused at validation (`failed/<name>.jsonl.error.json`).
        case runRefused
        /// Leave the note: the input is still in `outgoing`, or the batch's journal is still
        /// in `state/batches` (its end was not finished), so the batch runs on or its end is
        /// finished at this start, and that end runs the hook.
        case leaveToTheBatch
        /// Remove the note: the batch ended nowhere to be seen.
        case drop
    }

    /// The decision for a batch from what the spool holds for its name now.
    public static func decideBatch(inputPresent: Bool, journalPresent: Bool, summaryExists: Bool, refused: Bool) -> BatchDecision {
        if inputPresent || journalPresent { return .leaveToTheBatch }
        if summaryExists { return .runFromSummary }
        if refused { return .runRefused }
        return .drop
    }
}
