/// A request the background lane holds while it waits for its group and while its group
/// is sent: a whole task, or a batch file's line held as its offsets (`LaneLine`), which
/// is what most of a 50,000-line group is.
public enum LaneMember: Sendable, Equatable {
    /// Indirect: a table of members keeps one pointer for a task, not the task inline in
    /// every slot (its lines' slots would be a task's size each).
    indirect case task(TaskDescriptor)
    case line(LaneLine)

    /// How the lane holds `task`: as a line of `batch` when reading the line back gives
    /// this very task (read from that input, with a fresh line's history and nothing the
    /// scheduler added); whole otherwise (a request file, a line retried before a restart).
    public static func holding(_ task: TaskDescriptor, batch: LaneLineBatch?) -> LaneMember {
        guard let batch, let line = task.line, task.summary.body.lowerBound >= line.lowerBound,
              task.summary.body.upperBound <= line.upperBound else { return .task(task) }
        // Every field but the summary, which is the line's own and is read again with it.
        var fresh = TaskDescriptor(id: task.id, requestPath: batch.inputPath, summary: task.summary, identity: batch.identity,
                                   history: TaskHistory(firstSeen: batch.firstSeen))
        fresh.line = line
        guard fresh == task, task.summary.size == Int(clamping: batch.identity.size) else { return .task(task) }
        return .line(LaneLine(id: task.id, batch: batch, line: line, body: task.summary.body))
    }

    public var id: String {
        switch self {
        case .task(let task): task.id
        case .line(let line): line.id
        }
    }

    /// The file the member's body is read from.
    public var path: String {
        switch self {
        case .task(let task): task.requestPath
        case .line(let line): line.batch.inputPath
        }
    }

    /// The bytes of `path` that are the body sent.
    public var body: Range<Int> {
        switch self {
        case .task(let task): task.summary.body
        case .line(let line): line.body
        }
    }

    /// The identity `path` must still have for its body to be this member's.
    public var identity: FileIdentity? {
        switch self {
        case .task(let task): task.identity
        case .line(let line): line.batch.identity
        }
    }
}
