import Glibc

/// What the lane reads of batch files while it hands a group's outcomes over: each batch's
/// input and journal looked at once per round, however many of its lines the group holds.
struct LaneLineLookup {
    /// By batch name: the input recorded, and what it is against the file there now.
    var inputs: [String: (recorded: FileIdentity?, input: LaneLineFate.Input)] = [:]
    var journals: [String: BatchJournal?] = [:]
}

/// Members that are lines of a batch file (`outgoing/<name>.jsonl`): they have no request
/// file and no task record, so the lane asks the batch's input whether a line is still
/// wanted, and its journal whether the line's outcome was handed over before a restart.
/// Each line's outcome goes to the finisher, which hands it to the `BatchRunner`: it is
/// journalled once, with the batch's other lines, in the batch's group commit.
extension BackgroundLane {
    /// The batch's input now against the one the line was read from.
    func lineInput(_ line: BatchLineRef, recorded: FileIdentity?) -> LaneLineFate.Input {
        do {
            guard let found = try SpoolFiles(layout: layout).identity(of: layout.batchRequest(line.batch)) else { return .changed }
            return LaneMembership.isSameRequest(recorded: recorded, found: found) ? .same : .changed
        } catch {
            logger.warning("cannot look at a batch's input; will look again", id: line.batch, ["reason": "\(error)"])
            return .unknown
        }
    }

    /// What the batch's journal on disk says of the line. The journal is read as it is: a
    /// commit under way shows on a later look.
    func lineJournal(_ line: BatchLineRef, lookup: inout LaneLineLookup) -> LaneLineFate.Journal {
        if lookup.journals[line.batch] == nil {
            var journal: BatchJournal?
            do {
                let path = layout.batchJournal(line.batch)
                if try Syscall.exists(path) { journal = BatchJournal.replay(try FileReader.prefix(path: path, limit: 1 << 30)) }
            } catch {
                logger.warning("cannot read a batch's journal; will look again", id: line.batch, ["reason": "\(error)"])
            }
            lookup.journals[line.batch] = .some(journal)
        }
        guard let journal = lookup.journals[line.batch] ?? nil, line.entry >= 0, line.entry < journal.header.lines else { return .open }
        if journal.committed.contains(line.entry) { return .committed }
        return journal.attempts[line.entry] != nil ? .retried : .open
    }

    /// Whether a line member's outcome is to be handed over now. A line whose batch left
    /// (or was replaced) is discarded, one handed over before a restart is done with; both
    /// count as ended. Otherwise it waits for the runner to feed it again.
    func lineReady(_ member: RemoteIntent.Member, group id: String, lookup: inout LaneLineLookup) -> Bool {
        // No copy of the group is held here: it would make each insert below copy its sets.
        guard let line = BatchLineRef(id: member.id), groups[id] != nil else { return false }
        let atHand = groups[id]?.held[member.id] != nil
        let input: LaneLineFate.Input
        if let known = lookup.inputs[line.batch], known.recorded == member.request {
            input = known.input
        } else {
            input = lineInput(line, recorded: member.request)
            // Every line of one batch recorded the same input: it is looked at once a round.
            if input != .unknown { lookup.inputs[line.batch] = (member.request, input) }
        }
        let journal: LaneLineFate.Journal = atHand || input != .same ? .open : lineJournal(line, lookup: &lookup)
        switch LaneLineFate.decide(input: input, atHand: atHand, journal: journal) {
        case .publish:
            return true
        case .discard:
            groups[id]?.ended.insert(member.id)
            if atHand {
                post(.laneEnded(id: member.id))
                finisher.withdrawn(id: member.id)
                post(.finalized(id: member.id))
            }
            return false
        case .handedOver:
            groups[id]?.ended.insert(member.id)
            return false
        case .wait:
            return false
        }
    }

    /// A line of a sent group was withdrawn (its batch was cancelled, by deleting or
    /// replacing its input): it ends at once, cancelled, so that the batch can end without
    /// waiting for the remote batch; its answer is discarded when it comes. When no member
    /// is wanted any more, the remote batch is cancelled.
    func lineWithdrawn(_ id: String, group groupID: String) {
        guard groups[groupID]?.ended.contains(id) == false else { return }
        groups[groupID]?.ended.insert(id)
        logger.debug("a line of a sent group was withdrawn", id: id, ["group": LogValue(groupID)])
        if groups[groupID]?.held[id] != nil {
            post(.laneEnded(id: id))
            finisher.withdrawn(id: id)
            post(.finalized(id: id))
        }
        cancelIfUnwanted(groupID)
    }
}
