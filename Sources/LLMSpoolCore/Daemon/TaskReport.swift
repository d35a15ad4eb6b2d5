/// How a task ended, for whoever watches the daemon (the demo, tests, hooks).
public struct TaskReport: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        case succeeded(resultPath: String)
        case failed(recordPath: String, kind: AttemptFailure.Kind, message: String)
        case cancelled
        /// The outcome could not be written; the request stays in `outgoing` for a later try.
        case deferred(reason: String)
    }

    public let id: String
    public let outcome: Outcome
    /// The request file the outcome answers, when known: it names the outcome's note of a
    /// hook owed (`SpoolLayout.pendingHook`).
    public let request: FileIdentity?
    /// When the outcome's hook runs.
    public let hook: Hook

    /// A hook's `LLMSPOOL_ERROR` names the error record: a failure committed before its
    /// record could be written (`failed/` unwritable) has its hook wait for the clean-up
    /// that writes it.
    public enum Hook: Sendable, Equatable {
        /// The outcome is whole in the spool: its hook runs now.
        case now
        /// Committed, its error record not yet written: no hook yet; its note stays.
        case waitsForCleanUp
        /// That clean-up is done: the hook of an outcome reported earlier, and nothing else.
        case alone
    }

    public init(id: String, outcome: Outcome, request: FileIdentity? = nil, hook: Hook = .now) {
        self.id = id
        self.outcome = outcome
        self.request = request
        self.hook = hook
    }
}
