extension PublicationPlan {
    /// The end of a batch whose every line is committed in its journal (or cancelled): the
    /// output gets its name, its failed lines are written to the errors file (or a stale one
    /// removed), then the summary appears, last, then the input and the journal
    /// go, the list of its `custom_id`s just before the journal. Each step can be run again
    /// after a crash: the journal stays until the last step, and `BatchRecovery` says from
    /// where to go on.
    /// With `hookNote` (a hook is configured), the hook owed is noted first.
    /// `hasFailedLines`: some line did not succeed (the journal's counts), so the errors file
    /// is written; otherwise one left by an earlier batch of the name is removed.
    /// `outputTaken`: an end run again finds its published output gone, taken by its
    /// consumer (who waits for the summary, so the summary was out too): neither the errors
    /// file nor the summary is written again, only the input and the journal go.
    /// `outputLost`: the output's `.partial` was removed before it got its name: there is no
    /// output to name nor to read failed lines from; the summary (which says so) is written,
    /// and an earlier batch's errors file of the name removed.
    public static func batchEnd(name: String, input: String, identity: FileIdentity?, summary: [UInt8], outputPublished: Bool,
                                outputTaken: Bool = false, outputLost: Bool = false, summaryPublished: Bool = false,
                                hasFailedLines: Bool = false, layout: SpoolLayout, hookNote: String? = nil) -> [PublicationStep] {
        var steps = hookNoteSteps(hookNote, id: name, request: identity)
        let removal: [PublicationStep] = [.unlinkIfSame(input, identity: identity),
                                          .syncFolder(folder(of: input)),
                                          // Before the journal: a journal without its list is one the end finishes.
                                          .unlinkIfPresent(layout.batchIDList(name)),
                                          .unlinkIfPresent(layout.batchJournal(name)),
                                          .syncFolder(layout.batches)]
        // `summaryPublished`: an end run again after a failure past the summary's write (the
        // input could not be removed): the summary is not written again with a new end time.
        if outputPublished && outputTaken || summaryPublished { return steps + removal }
        if outputLost {
            return steps + [.unlinkIfPresent(layout.batchErrors(name)),
                            .syncFolder(layout.incoming),
                            .writeFile(layout.batchSummary(name), summary),
                            .syncFolder(layout.incoming)] + removal
        }
        if !outputPublished {
            steps += [.syncFile(layout.batchPartial(name)),
                      .rename(from: layout.batchPartial(name), to: layout.batchOutput(name))]
        }
        // The errors file is read from the published output: after a crash it is written
        // again from the same lines.
        steps += [hasFailedLines ? .writeFailedLines(from: layout.batchOutput(name), to: layout.batchErrors(name))
                                 : .unlinkIfPresent(layout.batchErrors(name)),
                  .syncFolder(layout.incoming),
                  .writeFile(layout.batchSummary(name), summary),
                  .syncFolder(layout.incoming)] + removal
        return steps
    }

    /// An invalid batch file: its error record, then the file moved beside it. Validation
    /// is repeatable, so a crash only means the same rejection again.
    public static func batchRejection(name: String, input: String, identity: FileIdentity?, errorRecord: [UInt8],
                                      layout: SpoolLayout, hookNote: String? = nil) -> [PublicationStep] {
        hookNoteSteps(hookNote, id: name, request: identity) + [
         .archiveIfPresent(layout.failedBatch(name), into: layout.superseded),
         .archiveIfPresent(layout.batchErrorRecord(name), into: layout.superseded),
         .writeFile(layout.batchErrorRecord(name), errorRecord),
         .moveIfSame(from: input, to: layout.failedBatch(name), identity: identity),
         .syncFolder(layout.failed),
         .syncFolder(folder(of: input))]
    }
}
