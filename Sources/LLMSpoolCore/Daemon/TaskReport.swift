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

    public init(id: String, outcome: Outcome, request: FileIdentity? = nil) {
        self.id = id
        self.outcome = outcome
        self.request = request
    }
}
