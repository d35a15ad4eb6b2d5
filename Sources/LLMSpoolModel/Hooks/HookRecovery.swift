/// What a start does with a hook noted as owed (`state/hooks/<id>`) by a daemon that died
/// before the hook had run. The note is written just before the outcome's commit point
/// and removed once the hook has run, so a note means: the outcome may be published, and
/// its hook has not run to its end. Pure.
public enum HookRecovery {
    /// The decision for one note.
    public enum Decision: Sendable, Equatable {
        /// Run `on_complete` for the result in `incoming`, then remove the note.
        case runOnComplete
        /// Run `on_failure` for the error record in `failed`, then remove the note.
        case runOnFailure
        /// Leave the note: the request is still in `outgoing`, and the daemon will either
        /// finish its clean-up (which reports the outcome and runs the hook) or send it
        /// again (whose outcome notes its own hook).
        case leaveToTheRequest
        /// Remove the note: nothing was published (the daemon died before the commit point,
        /// and the request was withdrawn since), so no hook is owed.
        case drop
    }

    /// The decision for a batch file's note.
    public enum BatchDecision: Sendable, Equatable {
        /// Run the batch's hook with the counts of its summary (`incoming/<name>.batch.json`).
        case runFromSummary
        /// Run `on_failure` for a batch refused at validation (`failed/<name>.error.json`).
        case runRefused
        /// Leave the note: the input is still in `outgoing`, so the batch runs on or ends at
        /// this start, and its end runs the hook.
        case leaveToTheBatch
        /// Remove the note: the batch ended nowhere to be seen.
        case drop
    }

    /// The decision for a batch from what the spool holds for its name now.
    public static func decideBatch(inputPresent: Bool, summaryExists: Bool, refused: Bool) -> BatchDecision {
        if inputPresent { return .leaveToTheBatch }
        if summaryExists { return .runFromSummary }
        if refused { return .runRefused }
        return .drop
    }

    /// The decision from what the spool holds for the note's id now. A result wins over an
    /// error record: a request that failed and was later retried to success has both only
    /// while the older failure is being archived, and its latest outcome is the result.
    public static func decide(requestPresent: Bool, resultExists: Bool, errorRecordExists: Bool) -> Decision {
        if requestPresent { return .leaveToTheRequest }
        if resultExists { return .runOnComplete }
        if errorRecordExists { return .runOnFailure }
        return .drop
    }
}
