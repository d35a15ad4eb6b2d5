/// When a running daemon ends a batch whose journal has been left without a runner: its
/// input left `outgoing` while no daemon ran it (its owner was killed and the input then
/// deleted; an end whose publication failed), so no cancellation and no takeover will come.
/// Every daemon looks for such journals, not only one that starts. Pure.
public enum BatchOrphanRules {
    /// What a daemon does with one journal it found in `state/batches`.
    public enum Action: Sendable, Equatable {
        /// Not an orphan: its input is there (a runner has it or will take it), or this
        /// daemon runs it (a removal reaches it as a cancellation).
        case leave
        /// An orphan, but another daemon holds its claim (it runs or ends it now): looked
        /// at again on the next sweep, in case that daemon dies.
        case lookAgain
        /// An orphan whose claim this daemon holds (or the spool is not shared): end it,
        /// cancelled (its lines not committed named from its `BatchIDList`), or published
        /// when they were all committed.
        case end
    }

    /// `claim` is nil when it was not asked for: the spool is not shared, or the journal
    /// is no orphan (checked first, so that a batch with its input costs no claim).
    public static func action(inputPresent: Bool, runningHere: Bool, claim: BatchClaimRules.Claim?) -> Action {
        guard !inputPresent, !runningHere else { return .leave }
        switch claim {
        case nil, .claimed?: return .end
        case .heldElsewhere?, .failed?: return .lookAgain
        }
    }

    /// Whether the claim must be asked for before the journal is ended.
    public static func needsClaim(inputPresent: Bool, runningHere: Bool, shared: Bool) -> Bool {
        shared && !inputPresent && !runningHere
    }

    /// Where an orphan's lines never committed get their `custom_id`s from, the input being gone.
    public enum Naming: Sendable, Equatable {
        /// Its list (`BatchIDList`): every line is in the output, those not committed cancelled.
        case idList
        /// No usable list (never kept: the disk was full at acceptance, or a daemon older than
        /// the list ran it; or damaged): the output holds the committed lines only, and the
        /// summary counts the rest as not completed.
        case committedOnly(reason: String)
    }

    /// `listProblem` is what reading the list through found (nil: whole and this input's);
    /// `listPresent` false when there is none.
    public static func naming(listPresent: Bool, listProblem: BatchIDList.Problem?) -> Naming {
        guard listPresent else { return .committedOnly(reason: "its custom_ids were not kept") }
        if let listProblem { return .committedOnly(reason: "its list of custom_ids cannot be used: \(listProblem)") }
        return .idList
    }

    /// The output lines and journal entries of one group of an orphan's lines, each
    /// cancelled (Anthropic's `canceled`), in the order given; lines already committed, and
    /// repeats, are skipped. Committed like any group: output, then journal.
    public static func cancelledGroup(_ ids: [(entry: Int, customID: String)], journal: BatchJournal,
                                      batch: String) -> (output: [UInt8], entries: [BatchJournal.Entry]) {
        var output: [UInt8] = []
        var entries: [BatchJournal.Entry] = []
        var seen = Set<Int>()
        for (entry, customID) in ids where entry >= 0 && entry < journal.header.lines && !journal.committed.contains(entry) && seen.insert(entry).inserted {
            output += BatchOutputLine.encode(kind: journal.header.kind, batch: batch, entry: entry, customID: customID, result: .cancelled)
            entries.append(BatchJournal.Entry(entry: entry, code: BatchLineResult.cancelled.journalCode, outputEnd: journal.outputLength + output.count))
        }
        return (output, entries)
    }

    /// Seconds between sweeps: on a shared spool as often as a batch another daemon holds
    /// is looked at (a dead owner's orphan is ended about when its claim can be taken
    /// over); alone, once a minute (a removal seen by the watcher sweeps at once).
    public static func sweepSeconds(leaseSeconds: Double, shared: Bool) -> Double {
        shared ? BatchClaimRules.lookAgainSeconds(leaseSeconds: leaseSeconds) : 60
    }
}
