/// The steps that publish each kind of outcome, in the order that makes every crash
/// recoverable. Pure: what to do, never how; `PublicationExecutor` runs them.
///
/// A failure's commit point is its task record, which carries the error record: after it,
/// `Recovery.decide` sees that the task ended and `completion` publishes what was left. A
/// success's record commits to a result by its inode, and the rename of that result into
/// `incoming` is what decides it: a crash before the rename leaves the result as a leftover
/// that a restart removes, and the request runs again from zero (at-least-once delivery,
/// exactly-once outcome); after it, the restart only removes the request. Either way a crash
/// before the commit point leaves nothing visible.
public enum PublicationPlan {
    /// What a success has to publish.
    public struct Success: Sendable, Equatable {
        public var task: TaskDescriptor
        public var record: TaskRecord
        /// The fsynced file that becomes the result: the `.partial` of a plain answer, the
        /// result's temporary for a stream.
        public var source: String
        /// A stream keeps its raw events as `.sse`.
        public var streamed: Bool
        /// A prompt file's transcript (`incoming/<id>.md`), published just before the result.
        public var transcript: [UInt8]?
        /// Where a stream's raw events are when its `.partial` holds the text instead
        /// (`SpoolLayout.rawEvents`); nil when they are the `.partial`.
        public var rawEvents: String?

        public init(task: TaskDescriptor, record: TaskRecord, source: String, streamed: Bool, transcript: [UInt8]? = nil,
                    rawEvents: String? = nil) {
            self.rawEvents = rawEvents
            self.task = task
            self.record = record
            self.source = source
            self.streamed = streamed
            self.transcript = transcript
        }
    }

    /// The part of a success that is the request's own: its bytes, then its commit point.
    /// Runs on the finisher's threads; the folder fsync of `state` is left to `commit`.
    public static func prepare(_ success: Success) -> [PublicationStep] {
        [.syncFile(success.source),
         .writeRecord(success.record, durable: true, resultInodeOf: success.source)]
    }

    /// The rest of a success, from the commit point on. In a batch, the folder fsyncs are
    /// shared (see `PublicationExecutor.runBatch`).
    public static func commit(_ success: Success, layout: SpoolLayout) -> [PublicationStep] {
        let id = success.task.id
        var steps: [PublicationStep] = [.syncFolder(layout.state)]
        if success.streamed { steps.append(.rename(from: success.rawEvents ?? layout.partial(id), to: layout.rawStream(id))) }
        // After the commit point and before the result: a crash in between runs the request
        // again (the result never got its name), whose transcript then replaces this one.
        if let transcript = success.transcript { steps.append(.writeFile(layout.transcript(id), transcript)) }
        steps += [.rename(from: success.source, to: layout.result(id)),
                  .syncFolder(layout.incoming)]
        // The text view has served its purpose once the result is there.
        if success.rawEvents != nil { steps.append(.unlinkIfPresent(layout.partial(id))) }
        steps += [.unlinkIfSame(success.task.requestPath, identity: success.task.identity),
                  .syncFolder(folder(of: success.task.requestPath))]
        return steps
    }

    /// A final failure. `record` is nil for a rejection at intake: validation is repeatable,
    /// so a crash only means the same rejection again, and no commit point is needed.
    public static func failure(task: TaskDescriptor, errorRecord: [UInt8], record: TaskRecord?, layout: SpoolLayout) -> [PublicationStep] {
        let id = task.id
        var steps: [PublicationStep] = []
        if let record { steps += [.writeRecord(record, durable: true, resultInodeOf: nil), .syncFolder(layout.state)] }
        let failedRequest = layout.failedRequest(id, like: task.requestPath)
        steps += [.archiveIfPresent(failedRequest, into: layout.superseded),
                  .archiveIfPresent(layout.errorRecord(id), into: layout.superseded),
                  .writeFile(layout.errorRecord(id), errorRecord),
                  .moveIfSame(from: task.requestPath, to: failedRequest, identity: task.identity),
                  .syncFolder(layout.failed),
                  .syncFolder(folder(of: task.requestPath)),
                  .unlinkIfPresent(layout.partial(id))]
        return steps
    }

    /// Another attempt will be made: nothing of this one stays, the record keeps the count.
    public static func retry(task: TaskDescriptor, record: TaskRecord, layout: SpoolLayout) -> [PublicationStep] {
        [.unlinkIfPresent(layout.partial(task.id)),
         .writeRecord(record, durable: true, resultInodeOf: nil)]
    }

    /// What a restart finishes for a task whose record says it ended.
    public static func completion(of record: TaskRecord, requestPath: String, identity: FileIdentity?, errorRecordExists: Bool,
                                  layout: SpoolLayout) -> [PublicationStep] {
        let id = record.id
        switch record.status {
        case .done:
            return [.unlinkIfSame(requestPath, identity: identity), .syncFolder(folder(of: requestPath))]
        case .failed:
            var steps: [PublicationStep] = []
            if !errorRecordExists, let bytes = record.errorRecord { steps.append(.writeFile(layout.errorRecord(id), bytes)) }
            steps += [.moveIfSame(from: requestPath, to: layout.failedRequest(id, like: requestPath), identity: identity),
                      .syncFolder(layout.failed), .syncFolder(folder(of: requestPath))]
            return steps
        case .active, .cancelled:
            return []
        }
    }

    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
