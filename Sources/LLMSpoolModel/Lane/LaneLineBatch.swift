import FoundationEssentials

/// What every line of one batch file held by the background lane shares, held once for
/// all of them: the batch's name, its input's path and identity, and when it was accepted
/// (a fresh line's history starts there). The endpoint and the url are the group's, and
/// the dialect each line's own (one batch may name several urls), so none is kept here.
public final class LaneLineBatch: Sendable, Equatable {
    public let name: String
    public let inputPath: String
    public let identity: FileIdentity
    public let firstSeen: Date

    public init(name: String, inputPath: String, identity: FileIdentity, firstSeen: Date) {
        self.name = name
        self.inputPath = inputPath
        self.identity = identity
        self.firstSeen = firstSeen
    }

    /// The batch a line's task was read from, as far as the task tells; nil for a task
    /// with no input identity, which cannot be checked again when the line is read back.
    public convenience init?(name: String, task: TaskDescriptor) {
        guard let identity = task.identity else { return nil }
        self.init(name: name, inputPath: task.requestPath, identity: identity, firstSeen: task.history.firstSeen)
    }

    public static func == (left: LaneLineBatch, right: LaneLineBatch) -> Bool {
        left === right || (left.name == right.name && left.inputPath == right.inputPath && left.identity == right.identity
            && left.firstSeen == right.firstSeen)
    }
}
