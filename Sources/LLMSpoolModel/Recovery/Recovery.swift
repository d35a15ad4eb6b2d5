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
    public static func decide(record: TaskRecord?, identity: FileIdentity?, resultInode: UInt64?,
                              resultModifiedNanoseconds: Int64? = nil) -> Decision {
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
}
