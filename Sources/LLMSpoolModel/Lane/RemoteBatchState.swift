/// Where a group's remote batch is in its life, as its intent record says. The order is
/// the order of the life: each state is recorded durably before the step that follows it.
public enum RemoteBatchState: String, Sendable, CaseIterable, Comparable {
    /// The intent is recorded; nothing remote exists yet.
    case intent
    /// The input file is uploaded (its id is recorded); a create may have been sent.
    case uploaded
    /// Anthropic (no upload): the create is about to be sent, or was; a batch may exist, and
    /// only the provider's list and the results' custom_ids can tell.
    case creating
    /// The remote batch exists and its id is recorded.
    case created
    /// Polled at least once and not ended.
    case polling
    /// The provider says it ended; its output and error file ids are recorded.
    case ended
    /// Its output (and error) file is on disk.
    case downloaded
    /// Every member's outcome is written beside the record, not yet published.
    case split
    /// Every member's outcome is published.
    case published

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
