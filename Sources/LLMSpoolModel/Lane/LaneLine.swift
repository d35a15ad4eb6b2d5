import FoundationEssentials

/// A batch file's line held by the background lane as where it lies in its batch's input,
/// not as a whole task (about 340 bytes a line): the task is read back from the line's
/// bytes when the lane hands its outcome over or returns it to the live lane.
public struct LaneLine: Sendable, Equatable {
    /// The line's request id (`SpoolLayout.lineID`): the key the lane's tables share.
    public let id: String
    public let batch: LaneLineBatch
    /// The line in the input, without its newline.
    public let line: Range<Int>
    /// The body that is sent, within `line` (the offsets are the file's).
    public let body: Range<Int>

    public init(id: String, batch: LaneLineBatch, line: Range<Int>, body: Range<Int>) {
        self.id = id
        self.batch = batch
        self.line = line
        self.body = body
    }

    /// What reading a held line back gives.
    public enum ReadBack: Sendable, Equatable {
        case task(TaskDescriptor)
        /// The bytes there are not the line that joined: its batch's input was replaced
        /// or changed, and nobody wants the line's answer.
        case changed(String)
    }

    /// The line's task again, from the bytes read at `line` in the batch's input (a file
    /// already checked to be `batch.identity`): what `BatchLine.read` made of them when
    /// the runner fed the line, with a fresh line's history.
    public func task(from bytes: [UInt8]) -> ReadBack {
        guard bytes.count == line.count else {
            return .changed("\(batch.inputPath): the line at offset \(line.lowerBound) is \(bytes.count) bytes, not the \(line.count) it had")
        }
        switch BatchLine.read(bytes, at: line.lowerBound, fileSize: Int(clamping: batch.identity.size)) {
        case .failure(let problem):
            return .changed("\(batch.inputPath): the line at offset \(line.lowerBound) no longer reads: \(problem.message)")
        case .success(let read):
            guard read.summary.body == body else {
                return .changed("\(batch.inputPath): the line at offset \(line.lowerBound) has its body elsewhere than when it joined")
            }
            var task = TaskDescriptor(id: id, requestPath: batch.inputPath, summary: read.summary, identity: batch.identity,
                                      history: TaskHistory(firstSeen: batch.firstSeen))
            task.line = line
            return .task(task)
        }
    }
}
