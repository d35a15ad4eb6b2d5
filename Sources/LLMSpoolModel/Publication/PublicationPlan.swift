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
///
/// A success has two commit orders (`CommitOrder`). In the one-fsync order the result's
/// temporary carries a mark naming its request (`ResultMark`) before its fsync, and the
/// record is written after it without fsync: the result's rename into `incoming` is the
/// commit point in both orders, and a restart that finds a marked result with a missing or
/// stale record rewrites the record (`Recovery.restoredRecord`).
public enum PublicationPlan {
    /// How a success commits.
    public enum CommitOrder: String, Sendable, Equatable, CaseIterable {
        /// The result fsynced, then the record fsynced and its folder: two fsyncs per result.
        case recordFirst = "record-first"
        /// The result marked with its request and fsynced, the record written without
        /// fsync: one fsync per result. Needs user extended attributes on the spool.
        case resultMarked = "result-marked"

        /// What the start-up probe of a spool found about user extended attributes.
        public enum Probe: Sendable, Equatable {
            case supported
            /// setxattr answered ENOTSUP/EOPNOTSUPP: tmpfs without user_xattr, some FUSE, NFS v3.
            case unsupported(String)
            /// The probe itself failed otherwise (a full disk, no permission): nothing is proven.
            case failed(String)
        }

        /// The order a spool commits in, decided once at start, and why. A shared spool keeps
        /// the record-first order: its records prove an end across mounts (by modification
        /// time, `Recovery.decide`), which a mark read through another mount's cache was not
        /// shown to do.
        public static func choose(sharedSpool: Bool, probe: Probe) -> (order: CommitOrder, reason: String) {
            if sharedSpool { return (.recordFirst, "the spool is shared by several daemons") }
            switch probe {
            case .supported: return (.resultMarked, "the spool keeps user extended attributes")
            case .unsupported(let why): return (.recordFirst, "the spool keeps no user extended attributes: \(why)")
            case .failed(let why): return (.recordFirst, "the extended attribute probe failed: \(why)")
            }
        }
    }

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
    /// A success whose request has no identity cannot be marked, and commits record first.
    /// With `hookNote` (an `on_complete` hook is configured), the hook owed is noted first.
    public static func prepare(_ success: Success, order: CommitOrder = .recordFirst, hookNote: String? = nil) -> [PublicationStep] {
        let note = hookNoteSteps(hookNote, id: success.task.id, request: success.task.identity)
        guard let mark = mark(of: success, order: order) else {
            return note + [.syncFile(success.source),
                           .writeRecord(success.record, durable: true, resultInodeOf: success.source)]
        }
        return note + [.markResult(success.source, mark),
                       .syncFile(success.source),
                       .writeRecord(success.record, durable: false, resultInodeOf: success.source)]
    }

    /// The mark a success's result carries in `order`, nil when it carries none.
    public static func mark(of success: Success, order: CommitOrder) -> ResultMark? {
        guard order == .resultMarked, let identity = success.task.identity else { return nil }
        return ResultMark(id: success.task.id, request: identity, dialect: success.record.dialect)
    }

    /// The rest of a success, from the commit point on. In a batch, the folder fsyncs are
    /// shared (see `PublicationExecutor.runBatch`).
    /// In the one-fsync order the record is not durable, so `state` is not fsynced either.
    public static func commit(_ success: Success, layout: SpoolLayout, order: CommitOrder = .recordFirst) -> [PublicationStep] {
        let id = success.task.id
        var steps: [PublicationStep] = mark(of: success, order: order) == nil ? [.syncFolder(layout.state)] : []
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

    /// The index of a plan's commit point: the rename that gives a success's result its
    /// name, or the durable record of a failure. A step after it that fails leaves the
    /// outcome standing; what is left is the clean-up's (`completion`, on a later scan),
    /// never a reason to send the request again. Nil for a plan without one.
    public static func commitPoint(of steps: [PublicationStep], result: String) -> Int? {
        steps.firstIndex { step in
            switch step {
            case .rename(_, let to): to == result
            case .writeRecord(let record, true, nil): record.status == .failed
            default: false
            }
        }
    }

    /// A final failure. `record` is nil for a rejection at intake: validation is repeatable,
    /// so a crash only means the same rejection again, and no commit point is needed. With
    /// `hookNote` (an `on_failure` hook is configured), the hook owed is noted first.
    public static func failure(task: TaskDescriptor, errorRecord: [UInt8], record: TaskRecord?, layout: SpoolLayout,
                               hookNote: String? = nil) -> [PublicationStep] {
        let id = task.id
        var steps = hookNoteSteps(hookNote, id: id, request: task.identity)
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

    /// What a restart finishes for a task whose record says it ended. `restored` is the
    /// record `Recovery.restoredRecord` rebuilt from a marked result: written first (without
    /// fsync: the result stays the proof), then the request goes.
    public static func completion(of record: TaskRecord, requestPath: String, identity: FileIdentity?, errorRecordExists: Bool,
                                  layout: SpoolLayout, restored: Bool = false) -> [PublicationStep] {
        let id = record.id
        switch record.status {
        case .done:
            return (restored ? [.writeRecord(record, durable: false, resultInodeOf: nil)] : [])
                + [.unlinkIfSame(requestPath, identity: identity), .syncFolder(folder(of: requestPath))]
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

    /// The note of a hook owed at `path`, holding the mark of the request it answers.
    static func hookNoteSteps(_ path: String?, id: String, request: FileIdentity?) -> [PublicationStep] {
        guard let path else { return [] }
        return [.notePendingHook(path, request.map { ResultMark(id: id, request: $0).encoded() } ?? [])]
    }

    /// The folder a path is in, as written (`.` for a bare name).
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
