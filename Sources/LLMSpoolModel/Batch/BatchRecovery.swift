/// What a (re)start does with a batch file in `outgoing`, given its journal. Pure.
public enum BatchRecovery {
    public enum Decision: Sendable, Equatable {
        /// No journal of this file: validate it and run every line.
        case fresh
        /// Cut the output back to the journal's length and run the lines not in it.
        case resume(BatchJournal)
        /// Every line is committed: finish the publication; `outputPublished` when the
        /// output already has its final name.
        case publish(BatchJournal, outputPublished: Bool)
        /// The input left while the daemon was down: the batch is cancelled with what it has.
        case cancelled(BatchJournal)
    }

    /// `input` is the identity of `outgoing/<name>.jsonl` (nil when gone), `partialLength`
    /// the length of `incoming/<name>.jsonl.partial` (nil when there is none).
    public static func decide(journal: BatchJournal?, input: FileIdentity?, partialLength: Int?) -> Decision {
        guard let journal else { return .fresh }
        let complete = journal.committed.count >= journal.header.lines
        guard let input else {
            return complete ? .publish(journal, outputPublished: partialLength == nil) : .cancelled(journal)
        }
        // A new file under the name is a new batch; the journal was the old one's.
        guard journal.header.input.isSameInstance(as: input) else { return .fresh }
        if complete { return .publish(journal, outputPublished: partialLength == nil) }
        // Output the journal committed is missing: nothing honest can be resumed.
        guard let partialLength, partialLength >= journal.outputLength else { return .fresh }
        return .resume(journal)
    }
}
