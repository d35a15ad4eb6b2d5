/// What the background lane does with a member that is a line of a batch file when its
/// group's outcomes are handed over, from what the batch's input file and journal say
/// (a line has no request file and no task record of its own). Pure.
public enum LaneLineFate: Sendable, Equatable {
    /// Its outcome goes to the finisher, and from there into the batch's journal.
    case publish
    /// The batch's input was deleted or replaced: the group's answer is for nobody.
    case discard
    /// Its outcome was handed over before a restart: committed, or failed and retried live.
    case handedOver
    /// Not at hand yet: the batch runner has not fed the line again since the restart.
    case wait

    /// The batch's input file now, against the one the line was read from.
    public enum Input: Sendable, Equatable {
        case same
        /// Gone, or another file under the batch's name.
        case changed
        /// It could not be looked at this time.
        case unknown
    }

    /// What the batch's journal says of the line.
    public enum Journal: Sendable, Equatable {
        /// Its output line is committed.
        case committed
        /// Its attempts are journalled: it failed and is retried through the live lane.
        case retried
        /// Neither (or the journal is not there or not readable).
        case open
    }

    /// `atHand`: the runner fed the line's task to the lane in this run (it is not committed:
    /// the runner feeds no committed line).
    public static func decide(input: Input, atHand: Bool, journal: Journal) -> LaneLineFate {
        switch input {
        case .changed: return .discard
        case .unknown: return .wait
        case .same: break
        }
        if atHand { return .publish }
        switch journal {
        case .committed, .retried: return .handedOver
        case .open: return .wait
        }
    }
}
