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
        /// The input left while no daemon ran the batch: it is cancelled with what it has.
        case cancelled(BatchJournal)
        /// Another file took the name while no daemon ran the batch: the journal's batch ends
        /// first, as if its input had left (cancelled, or published when every line was
        /// committed), and the new file then starts afresh. Its committed lines were paid
        /// for and are not thrown away.
        case replaced(BatchJournal)
    }

    /// `input` is the identity of `outgoing/<name>.jsonl` (nil when gone), `partialLength`
    /// the length of `incoming/<name>.jsonl.partial` (nil when there is none). A journal
    /// another mount wrote is recognised only when `input` has the content's fingerprint.
    public static func decide(journal: BatchJournal?, input: FileIdentity?, partialLength: Int?) -> Decision {
        guard let journal else { return .fresh }
        let complete = journal.committed.count >= journal.header.lines
        guard let input else {
            return complete ? .publish(journal, outputPublished: partialLength == nil) : .cancelled(journal)
        }
        // A new file under the name is a new batch; the journal was the old one's.
        guard journalNames(input, recorded: journal.header.input) else { return .replaced(journal) }
        // Output the journal committed is missing: nothing honest can be resumed, nor
        // published (a summary would count lines the output lacks).
        if let partialLength, partialLength < journal.outputLength { return .fresh }
        if complete { return .publish(journal, outputPublished: partialLength == nil) }
        guard partialLength != nil else { return .fresh }
        return .resume(journal)
    }

    /// Whether `found`, the input as this daemon sees it, is the file the journal was
    /// written for (`recorded`), which may have been seen through another mount of a shared
    /// spool. Through one mount, device and inode say it, as for a task record
    /// (`isSameInstance`). Through another, device numbers are that mount's own, and sshfs
    /// numbers inodes per mount, so the file is known by what every mount sees alike, as
    /// `Recovery.decide` knows another mount's record (`isSameInstanceAcrossMounts`): size,
    /// modification time to the second, birth time when both have it, and the fingerprint
    /// of the whole content, which both must have. Device numbers are handed out by each
    /// machine, so two machines' mounts can have the same one: a different inode under the
    /// same device is judged across mounts too. On one mount that is a replaced file, and it
    /// then differs by birth time (where the filesystem keeps one) or by content; a copy of
    /// the same bytes with the same modification second is the same batch, whose committed
    /// lines are the ones it would send.
    public static func journalNames(_ found: FileIdentity, recorded: FileIdentity) -> Bool {
        if found.device == recorded.device && found.inode == recorded.inode { return recorded.isSameInstance(as: found) }
        return recorded.isSameInstanceAcrossMounts(as: found)
    }
}
