import FoundationEssentials

/// What a restart should do with a request, given its record. Pure.
public enum Recovery {
    public enum Decision: Sendable, Equatable {
        case fresh
        case resume(TaskHistory)
        case alreadyEnded
    }

    /// `resultModifiedNanoseconds` is the modification time of `incoming/<id>.json` now,
    /// used for a record another mount of a shared spool wrote (its device differs): there
    /// inode numbers are the mount's own, so the result proves this request's end when it
    /// was written after the request. A result left by an earlier task of the id is older
    /// than the request that replaced it. Both times come from the one server's clock.
    ///
    /// `resultMark` is the mark `incoming/<id>.json` carries (`ResultMark`), when it has
    /// one: a mark naming this very request proves its end whatever the record says, since
    /// in the one-fsync order the record is written after the result without fsync and may
    /// be missing or stale after a power loss (`restoredRecord` then rewrites it).
    public static func decide(record: TaskRecord?, identity: FileIdentity?, resultInode: UInt64?,
                              resultModifiedNanoseconds: Int64? = nil, resultMark: ResultMark? = nil) -> Decision {
        // The result sits at `incoming/<id>.json`, so its id is the request's; a record (when
        // there is one) must agree.
        if let identity, let resultMark, resultMark.proves(id: record?.id ?? resultMark.id, identity: identity) {
            return .alreadyEnded
        }
        guard let record, let identity, let recorded = record.request else { return .fresh }
        let acrossMounts = recorded.device != identity.device
        guard acrossMounts ? recorded.isSameInstanceAcrossMounts(as: identity) : recorded.isSameInstance(as: identity) else { return .fresh }
        switch record.status {
        case .active:
            return .resume(record.history)
        case .done:
            if acrossMounts {
                guard let modified = resultModifiedNanoseconds, record.resultInode != nil,
                      modified / 1_000_000_000 >= recorded.modifiedNanoseconds / 1_000_000_000 else { return .fresh }
                return .alreadyEnded
            }
            if let published = record.resultInode, published == resultInode { return .alreadyEnded }
            return .fresh
        case .failed:
            return .alreadyEnded
        case .cancelled:
            return .fresh
        }
    }

    /// The record a restart writes before it completes a task whose result's mark proves
    /// its end while the record does not (missing, stale, or from before the result): a
    /// `done` record naming the result, keeping the attempts of a record of this request.
    /// Nil when the record already proves it, or when the mark proves nothing.
    public static func restoredRecord(record: TaskRecord?, id: String, identity: FileIdentity, resultInode: UInt64,
                                      resultMark: ResultMark?, now: Date) -> TaskRecord? {
        guard let resultMark, resultMark.proves(id: id, identity: identity) else { return nil }
        if let record, record.status == .done, record.resultInode == resultInode,
           record.request.map({ $0.isSameInstance(as: identity) }) == true { return nil }
        let ownHistory = record.flatMap { record in record.request.map { $0.isSameInstance(as: identity) } == true ? record.history : nil }
        var restored = TaskRecord(id: id, status: .done, request: identity, history: CrashGuard.ended(ownHistory ?? TaskHistory(firstSeen: now)),
                                  endpoint: record?.endpoint, usage: record?.usage, resultInode: resultInode)
        restored.dialect = resultMark.dialect
        return restored
    }
}
