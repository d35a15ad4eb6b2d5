/// What a restart should do with a request, given its record. Pure.
public enum Recovery {
    public enum Decision: Sendable, Equatable {
        case fresh
        case resume(TaskHistory)
        case alreadyEnded
    }

    public static func decide(record: TaskRecord?, identity: FileIdentity?, resultInode: UInt64?) -> Decision {
        guard let record, let identity, let recorded = record.request, recorded.isSameInstance(as: identity) else { return .fresh }
        switch record.status {
        case .active:
            return .resume(record.history)
        case .done:
            if let published = record.resultInode, published == resultInode { return .alreadyEnded }
            return .fresh
        case .failed:
            return .alreadyEnded
        case .cancelled:
            return .fresh
        }
    }
}
