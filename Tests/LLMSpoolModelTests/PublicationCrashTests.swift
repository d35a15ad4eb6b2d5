import Foundation
import Testing
@testable import LLMSpoolModel

/// A spool in memory, with what a power loss keeps. While the machine runs (and after a
/// kill, which leaves the page cache), every step is seen at once. A power loss keeps only
/// what was made durable: a file's bytes and mark once it was fsynced (or written durably),
/// and the names created, renamed and unlinked up to the last of them that a fsynced folder
/// took part in. That is how a journaled filesystem orders its metadata: a folder's fsync
/// commits the changes before it. A file whose bytes were never fsynced comes back empty,
/// and a record that comes back empty cannot be read: it counts as missing.
final class MemoryFiles: PublicationFiles, @unchecked Sendable {
    // @unchecked Sendable holds because each test drives its files from one thread; the
    // executor's step hook is @Sendable only because the daemon's runs on worker threads.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    struct File {
        var inode: UInt64
        var bytes: [UInt8]
        var mark: ResultMark? = nil
        var record: TaskRecord? = nil
    }

    enum NameChange {
        case link(String, UInt64)
        case rename(String, String)
        case unlink(String)

        var folders: [String] {
            switch self {
            case .link(let path, _), .unlink(let path): [PublicationPlan.folder(of: path)]
            case .rename(let from, let to): [PublicationPlan.folder(of: from), PublicationPlan.folder(of: to)]
            }
        }
    }

    let layout: SpoolLayout
    private var names: [String: UInt64] = [:]
    private var contents: [UInt64: File] = [:]
    private var durableNames: [String: UInt64] = [:]
    private var durableContents: [UInt64: File] = [:]
    private var pending: [NameChange] = []
    var folders: Set<String> = []
    private var nextInode: UInt64 = 100
    /// A step that touches this path fails (a full disk, a folder deleted underneath).
    var failing: String?

    init(layout: SpoolLayout = SpoolLayout(root: "spool")) {
        self.layout = layout
    }

    /// What a running system sees, by path.
    var files: [String: File] {
        names.compactMapValues { contents[$0] }
    }

    /// The task records a restart can read, by id.
    var records: [String: TaskRecord] {
        var found: [String: TaskRecord] = [:]
        for (path, inode) in names where PublicationPlan.folder(of: path) == layout.state {
            if let record = contents[inode]?.record { found[record.id] = record }
        }
        return found
    }

    private func newFile(_ bytes: [UInt8], record: TaskRecord? = nil) -> UInt64 {
        nextInode += 1
        contents[nextInode] = File(inode: nextInode, bytes: bytes, record: record)
        return nextInode
    }

    private func link(_ path: String, _ inode: UInt64, durable: Bool) {
        names[path] = inode
        if durable { durableContents[inode] = contents[inode] }
        pending.append(.link(path, inode))
    }

    /// A file already there; `durable` when it survives a power loss (a producer's request
    /// dropped long ago), not when the attempt has just written it.
    func create(_ path: String, _ text: String, durable: Bool = true) {
        let inode = newFile(Array(text.utf8))
        if durable {
            names[path] = inode
            durableNames[path] = inode
            durableContents[inode] = contents[inode]
        } else {
            link(path, inode, durable: false)
        }
    }

    /// A record already there, durable (the one written when the attempt started).
    func createRecord(_ record: TaskRecord) {
        let inode = newFile(Array("record".utf8), record: record)
        names[layout.taskRecord(record.id)] = inode
        durableNames[layout.taskRecord(record.id)] = inode
        durableContents[inode] = contents[inode]
    }

    func text(_ path: String) -> String? { files[path].map { String(decoding: $0.bytes, as: UTF8.self) } }

    func guardPath(_ path: String) throws(Failure) {
        if let failing, path.hasPrefix(failing) { throw Failure(description: "\(path): no space left") }
    }

    func syncFile(_ path: String) throws(Failure) {
        try guardPath(path)
        guard let inode = names[path] else { throw Failure(description: "\(path): no such file") }
        durableContents[inode] = contents[inode]
    }

    func inode(of path: String) throws(Failure) -> UInt64 {
        guard let inode = names[path] else { throw Failure(description: "\(path): no such file") }
        return inode
    }

    func write(_ bytes: [UInt8], to path: String, durable: Bool) throws(Failure) {
        try guardPath(path)
        link(path, newFile(bytes), durable: durable)
    }

    func writeFailedLines(of output: String, to path: String) throws(Failure) {
        try guardPath(path)
        guard let inode = names[output], let bytes = contents[inode]?.bytes else { return }
        var failed: [UInt8] = []
        for line in bytes.split(separator: 0x0A) where line.withUnsafeBytes({ BatchOutputLine.isFailed($0) }) {
            failed += line + [0x0A]
        }
        link(path, newFile(failed), durable: true)
    }

    func writeRecord(_ record: TaskRecord, durable: Bool) throws(Failure) {
        let path = layout.taskRecord(record.id)
        try guardPath(path)
        link(path, newFile(Array("record".utf8), record: record), durable: durable)
    }

    func rename(_ from: String, _ to: String) throws(Failure) {
        try guardPath(to)
        guard let inode = names.removeValue(forKey: from) else { throw Failure(description: "\(from): no such file") }
        names[to] = inode
        pending.append(.rename(from, to))
    }

    func renameIfPresent(_ from: String, _ to: String) throws(Failure) -> Bool {
        guard names[from] != nil else { return false }
        try rename(from, to)
        return true
    }

    /// Paths a lookup still finds after their removal, as through a network mount's stale
    /// cache, with the identity they had.
    var staleLookups: [String: FileIdentity] = [:]

    func identity(of path: String) throws(Failure) -> FileIdentity? {
        files[path].map { Self.identity($0) } ?? staleLookups[path]
    }

    static func identity(_ file: File) -> FileIdentity {
        FileIdentity(device: 1, inode: file.inode, size: Int64(file.bytes.count), modifiedNanoseconds: 0, bornNanoseconds: Int64(file.inode))
    }

    @discardableResult
    func unlinkIfPresent(_ path: String) throws(Failure) -> Bool {
        try guardPath(path)
        guard names.removeValue(forKey: path) != nil else { return false }
        pending.append(.unlink(path))
        return true
    }

    func exists(_ path: String) throws(Failure) -> Bool { names[path] != nil }

    func syncFolder(_ path: String) throws(Failure) {
        try guardPath(path)
        guard let last = pending.lastIndex(where: { $0.folders.contains(path) }) else { return }
        for change in pending[...last] {
            switch change {
            case .link(let path, let inode): durableNames[path] = inode
            case .rename(let from, let to): durableNames[to] = durableNames.removeValue(forKey: from)
            case .unlink(let path): durableNames[path] = nil
            }
        }
        pending.removeFirst(last + 1)
    }

    func ensureFolder(_ path: String) throws(Failure) { folders.insert(path) }

    func mark(_ path: String, _ mark: ResultMark) throws(Failure) {
        try guardPath(path)
        guard let inode = names[path] else { throw Failure(description: "\(path): no such file") }
        contents[inode]?.mark = mark
    }

    /// The machine loses power: only what was durable is left.
    func losePower() {
        names = durableNames
        pending = []
        contents = [:]
        for inode in Set(names.values) {
            contents[inode] = durableContents[inode] ?? File(inode: inode, bytes: [])
        }
    }

    /// What a restarting daemon removes before anything runs: attempts' `.partial`s and
    /// hidden temporaries.
    func removeLeftovers() {
        for path in names.keys where path.hasSuffix(SpoolLayout.partialSuffix) || PublicationPlan.name(of: path).hasPrefix(".") {
            names[path] = nil
            pending.append(.unlink(path))
        }
    }
}

/// Counts steps from inside an executor's hook.
final class StepCounter: @unchecked Sendable {
    // @unchecked Sendable holds because the hook runs on the test's own thread.
    var value = 0
}

@Suite struct PublicationCrashTests {
    let layout = SpoolLayout(root: "spool")
    let id = "q1"
    let requestText = #"{"model":"m","messages":[]}"#
    let answer = #"{"object":"chat.completion","choices":[]}"#

    let transcript = "## user\n\nHi\n\n## assistant\n\nHello\n"

    enum Kind: String, CaseIterable {
        case plainSuccess, streamedSuccess, finalFailure, rejection
        /// A prompt file (`outgoing/q1.md`): its success publishes a transcript too, its
        /// failure moves it to `failed/q1.md`.
        case promptSuccess, promptFailure

        var isPrompt: Bool { self == .promptSuccess || self == .promptFailure }
        var isSuccess: Bool { self == .plainSuccess || self == .streamedSuccess || self == .promptSuccess }
    }

    func requestPath(_ kind: Kind) -> String {
        kind.isPrompt ? "\(layout.outgoing)/\(id).md" : layout.request(id)
    }

    /// How a task stands once a restart has done its recovery.
    enum Settled: Equatable {
        /// Published once: the result, or the failure and its record.
        case done, failed
        /// Nothing visible; the request runs again.
        case runsAgain
    }

    func task(_ files: MemoryFiles, _ kind: Kind = .plainSuccess) -> TaskDescriptor {
        let path = requestPath(kind)
        let identity = files.files[path].map(MemoryFiles.identity)
        return TaskDescriptor(id: id, requestPath: path, summary: RequestSummary(model: "m", stream: false, size: requestText.utf8.count),
                              identity: identity, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
    }

    /// How the daemon stops in the middle of a plan.
    enum Crash: String, CaseIterable {
        /// The process dies; the page cache, and so every step done, survives.
        case kill
        /// The machine loses power: only what was fsynced survives (`MemoryFiles.losePower`).
        case powerLoss
    }

    /// A spool with the request in flight, its record from the attempt's start, the
    /// attempt's files written (not fsynced), and the plan that publishes its outcome.
    func setUp(_ kind: Kind, order: PublicationPlan.CommitOrder = .recordFirst, hookNote: Bool = false) -> (MemoryFiles, [PublicationStep]) {
        let files = MemoryFiles()
        files.create(requestPath(kind), requestText)
        let task = task(files, kind)
        let note = hookNote ? layout.pendingHook(id, request: task.identity) : nil
        var started = task.history
        started.unfinishedStarts = 1
        files.createRecord(TaskRecord(id: id, status: .active, request: task.identity, history: started))
        switch kind {
        case .plainSuccess, .streamedSuccess, .promptSuccess:
            let streamed = kind != .plainSuccess
            // A prompt file's raw events are hidden while its `.partial` shows the text.
            let raw = kind == .promptSuccess ? layout.rawEvents(id) : layout.partial(id)
            files.create(raw, streamed ? "data: {...}\n\ndata: [DONE]\n\n" : answer, durable: false)
            if kind == .promptSuccess { files.create(layout.partial(id), "Hello", durable: false) }
            let source = streamed ? SpoolLayout.temporary(for: layout.result(id)) : layout.partial(id)
            if streamed { files.create(source, answer, durable: false) }
            let record = TaskRecord(id: id, status: .done, request: task.identity, history: task.history)
            let success = PublicationPlan.Success(task: task, record: record, source: source, streamed: streamed,
                                                  transcript: kind == .promptSuccess ? Array(transcript.utf8) : nil,
                                                  rawEvents: kind == .promptSuccess ? raw : nil)
            return (files, PublicationPlan.prepare(success, order: order, hookNote: note) + PublicationPlan.commit(success, layout: layout, order: order))
        case .finalFailure, .rejection, .promptFailure:
            files.create(layout.partial(id), #"{"error":{"message":"bad"}}"#, durable: false)
            let record = kind != .rejection ? TaskRecord(id: id, status: .failed, request: task.identity, history: task.history,
                                                            errorRecord: Array(#"{"kind":"http"}"#.utf8)) : nil
            return (files, PublicationPlan.failure(task: task, errorRecord: Array(#"{"kind":"http"}"#.utf8), record: record, layout: layout,
                                                   hookNote: note))
        }
    }

    /// What a restart does: leftovers go, then `Recovery.decide` for the request still in
    /// `outgoing` (with the result's mark, as the daemon reads it), and the completion plan
    /// for a task that ended, after the record a marked result proves is written again.
    func restart(_ files: MemoryFiles, _ kind: Kind) -> Settled {
        files.removeLeftovers()
        let requestPath = requestPath(kind)
        if let identity = try? files.identity(of: requestPath) {
            let result = files.files[layout.result(id)]
            switch Recovery.decide(record: files.records[id], identity: identity, resultInode: result?.inode, resultMark: result?.mark) {
            case .fresh, .resume:
                return .runsAgain
            case .alreadyEnded:
                let restored = result.flatMap {
                    Recovery.restoredRecord(record: files.records[id], id: id, identity: identity, resultInode: $0.inode, resultMark: $0.mark,
                                            now: Date(timeIntervalSince1970: 0))
                }
                guard let record = restored ?? files.records[id] else {
                    Issue.record("\(kind): decided as ended with neither a record nor a marked result")
                    return .runsAgain
                }
                let steps = PublicationPlan.completion(of: record, requestPath: requestPath, identity: identity,
                                                       errorRecordExists: files.files[layout.errorRecord(id)] != nil, layout: layout,
                                                       restored: restored != nil)
                guard case .completed = PublicationExecutor(files: files).run(steps) else { return .runsAgain }
            }
        }
        return files.files[layout.result(id)] != nil ? .done : .failed
    }

    /// The index of the step after which the outcome is decided. A failure's record
    /// carries everything it publishes, so the record decides it. A success's record only
    /// names the result it commits to: until that result has its name in `incoming`, a
    /// restart removes it with the other leftovers and the request runs again from zero
    /// (at-least-once delivery, exactly-once outcome). A rejection has no record: moving the
    /// request out of `outgoing` decides it.
    func commitPoint(_ steps: [PublicationStep], kind: Kind) -> Int? {
        steps.firstIndex { step in
            switch (kind, step) {
            case (.plainSuccess, .rename(_, let to)), (.streamedSuccess, .rename(_, let to)), (.promptSuccess, .rename(_, let to)):
                to == layout.result(id)
            case (.finalFailure, .writeRecord), (.promptFailure, .writeRecord): true
            case (.rejection, .moveIfSame): true
            default: false
            }
        }
    }

    /// After a power loss the outcome is decided only once the commit point is durable: by
    /// the first folder fsync after it.
    func durableCommitPoint(_ steps: [PublicationStep], kind: Kind) -> Int? {
        guard let commit = commitPoint(steps, kind: kind) else { return nil }
        return steps.indices.first { $0 > commit && steps[$0].sharedFolder != nil }
    }

    @Test(arguments: Kind.allCases, PublicationPlan.CommitOrder.allCases)
    func aCrashAfterAnyStepLeavesExactlyOneOutcome(kind: Kind, order: PublicationPlan.CommitOrder) {
        for crash in Crash.allCases { crashAfterEveryStep(kind: kind, order: order, crash: crash) }
    }

    func crashAfterEveryStep(kind: Kind, order: PublicationPlan.CommitOrder, crash: Crash) {
        let (_, plan) = setUp(kind, order: order)
        for k in 0...plan.count {
            let (files, steps) = setUp(kind, order: order)
            let executor = PublicationExecutor(files: files, beforeStep: { index, _ in index < k })
            _ = executor.run(steps)
            if crash == .powerLoss { files.losePower() }
            let settled = restart(files, kind)
            let context = "\(kind), \(order.rawValue), \(crash) before step \(k) of \(steps.count) (\(k < steps.count ? steps[k].kind : "none"))"
            let result = files.files[layout.result(id)] != nil
            let failedPath = layout.failedRequest(id, like: requestPath(kind))
            let failedRequest = files.files[failedPath] != nil
            let errorRecord = files.files[layout.errorRecord(id)] != nil
            let queued = files.files[requestPath(kind)] != nil
            switch settled {
            case .done:
                #expect(result && !failedRequest && !errorRecord && !queued, "\(context): one result, nothing else")
                #expect(files.text(layout.result(id)) == answer, "\(context): the result is the answer")
                #expect(kind.isSuccess, "\(context)")
                // The transcript is in place before the result, which is the last file to appear.
                #expect(files.text(layout.transcript(id)) == (kind == .promptSuccess ? transcript : nil), "\(context): the transcript")
                #expect((files.files[layout.rawStream(id)] != nil) == (kind != .plainSuccess), "\(context): a stream keeps its raw events")
                #expect(files.files[layout.partial(id)] == nil && files.files[layout.rawEvents(id)] == nil, "\(context): no partial is left")
            case .failed:
                #expect(failedRequest && errorRecord && !result && !queued, "\(context): the request and its record in failed")
                #expect(files.text(failedPath) == requestText, "\(context)")
                #expect(!kind.isSuccess, "\(context)")
                #expect(kind != .promptFailure || failedPath.hasSuffix("/q1.md"), "\(context): a prompt file keeps its ending in failed")
            case .runsAgain:
                #expect(queued && !result && !failedRequest, "\(context): nothing published, the request still queued")
            }
            // Past the commit point (durable, for a power loss) the outcome is decided: it is
            // never sent again.
            let decidedAfter = crash == .kill ? commitPoint(steps, kind: kind) : durableCommitPoint(steps, kind: kind)
            if let decided = decidedAfter, k > decided {
                #expect(settled != .runsAgain, "\(context): ran again after its outcome was committed")
            }
            // A completed plan needs no recovery.
            if k == steps.count { #expect(settled != .runsAgain, "\(context)") }
            // A restart leaves the record of a published success saying so, whatever was lost.
            // (The request is gone then, so nothing runs it again; in the one-fsync order the
            // record may be lost by a power loss after the request's unlink became durable,
            // and the result's mark still names the request.)
            if settled == .done {
                let marked = files.files[layout.result(id)]?.mark?.id == id
                #expect(files.records[id]?.status == .done || crash == .powerLoss && order == .resultMarked && marked,
                        "\(context): a done record, or a marked result")
            }
        }
    }

    /// A hook is owed for every published outcome, whatever step the daemon was killed
    /// after: either the request is still in `outgoing` and the restart's clean-up reports
    /// the outcome (which runs the hook), or the note names it and `HookRecovery` runs the
    /// hook that matches the outcome. Nothing published, no hook. (A power loss can lose the
    /// note, which is not fsynced: README says so.)
    @Test(arguments: Kind.allCases, PublicationPlan.CommitOrder.allCases)
    func aKillAfterAnyStepLeavesTheHookOwed(kind: Kind, order: PublicationPlan.CommitOrder) {
        let (setUpFiles, plan) = setUp(kind, order: order, hookNote: true)
        let identity = task(setUpFiles, kind).identity
        let notePath = layout.pendingHook(id, request: identity)
        #expect(plan.first == .notePendingHook(notePath, ResultMark(id: id, request: identity!).encoded()),
                "\(kind): the note comes first, before the commit point, with the request's mark")
        for k in 0...plan.count {
            let (files, steps) = setUp(kind, order: order, hookNote: true)
            _ = PublicationExecutor(files: files, beforeStep: { index, _ in index < k }).run(steps)
            files.removeLeftovers()
            let context = "\(kind), \(order.rawValue), killed before step \(k) of \(steps.count)"
            // What the start sees, before the watcher finds the request again.
            let noted = files.files[notePath].map { ResultMark.parse($0.bytes) }
            let mark: ResultMark?
            if case .success(let parsed)? = noted { mark = parsed } else { mark = nil }
            let result = files.files[layout.result(id)]
            let found = HookRecovery.Found(queued: files.files[requestPath(kind)].map(MemoryFiles.identity), record: files.records[id],
                                           resultInode: result?.inode, resultMark: result?.mark,
                                           failedRequest: files.files[layout.failedRequest(id, like: requestPath(kind))].map(MemoryFiles.identity),
                                           errorRecordExists: files.files[layout.errorRecord(id)] != nil)
            let decision = HookRecovery.decide(id: id, note: mark, found: found)
            let queued = found.queued != nil
            let settled = restart(files, kind)
            switch (settled, queued) {
            case (_, true):
                // The clean-up reports a published outcome; a request that runs again notes its own.
                #expect(decision == .leaveToTheRequest, "\(context)")
            case (.done, false):
                #expect(mark != nil && decision == .runOnComplete, "\(context): on_complete is owed and noted")
            case (.failed, false):
                #expect(mark != nil && decision == .runOnFailure, "\(context): on_failure is owed and noted")
            case (.runsAgain, false):
                Issue.record("\(context): nothing queued cannot run again")
            }
        }
    }

    @Test(arguments: PublicationPlan.CommitOrder.allCases, Crash.allCases)
    func aBatchCrashedAnywhereLeavesEachTaskDoneOrQueued(order: PublicationPlan.CommitOrder, crash: Crash) {
        let ids = ["a", "b", "c"]
        func build() -> (MemoryFiles, [[PublicationStep]], [PublicationStep]) {
            let files = MemoryFiles()
            var prepared: [PublicationStep] = []
            var commits: [[PublicationStep]] = []
            for id in ids {
                files.create(layout.request(id), requestText + id)
                files.create(layout.partial(id), answer + id, durable: false)
                let identity = files.files[layout.request(id)].map(MemoryFiles.identity)
                let task = TaskDescriptor(id: id, requestPath: layout.request(id), summary: RequestSummary(model: "m", stream: false, size: 1),
                                          identity: identity, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
                let success = PublicationPlan.Success(task: task, record: TaskRecord(id: id, status: .done, request: identity, history: task.history),
                                                      source: layout.partial(id), streamed: false)
                prepared += PublicationPlan.prepare(success, order: order)
                commits.append(PublicationPlan.commit(success, layout: layout, order: order))
            }
            return (files, commits, prepared)
        }
        let (_, commits, _) = build()
        // Folder fsyncs are shared: three plans of six steps run in fewer than eighteen.
        let counter = StepCounter()
        let (countFiles, _, countPrepared) = build()
        _ = PublicationExecutor(files: countFiles).run(countPrepared)
        _ = PublicationExecutor(files: countFiles, beforeStep: { _, _ in counter.value += 1; return true }).runBatch(commits)
        let counted = counter.value
        let stateSync = order == .recordFirst ? 1 : 0
        #expect(counted == stateSync + 3 + 1 + 3 + 1,
                "\(order.rawValue): \(stateSync) state fsync, three renames, one incoming fsync, three unlinks, one outgoing fsync: \(counted)")
        for k in 0...counted {
            let (files, commits, prepared) = build()
            _ = PublicationExecutor(files: files).run(prepared)
            let index = StepCounter()
            _ = PublicationExecutor(files: files, beforeStep: { _, _ in defer { index.value += 1 }; return index.value < k }).runBatch(commits)
            if crash == .powerLoss { files.losePower() }
            files.removeLeftovers()
            let context = "batch, \(order.rawValue), \(crash) before step \(k)"
            for id in ids {
                let queued = files.files[layout.request(id)] != nil
                let result = files.files[layout.result(id)]
                let decision = queued ? Recovery.decide(record: files.records[id], identity: files.files[layout.request(id)].map(MemoryFiles.identity),
                                                        resultInode: result?.inode, resultMark: result?.mark) : .alreadyEnded
                switch decision {
                case .alreadyEnded:
                    #expect(files.text(layout.result(id)) == answer + id, "\(context): \(id) ended with its own result")
                case .fresh, .resume:
                    #expect(result == nil, "\(context): \(id) runs again with nothing published")
                }
            }
        }
    }

    @Test func aNewerRequestUnderTheSameNameIsNeverRemoved() {
        let (files, steps) = setUp(.plainSuccess)
        // The producer replaces the request (dot-file and rename: a new inode) while the
        // old one is in flight.
        let replaceAt = steps.firstIndex { if case .unlinkIfSame = $0 { return true } else { return false } }!
        let executor = PublicationExecutor(files: files, beforeStep: { index, _ in
            if index == replaceAt { files.create(layout.request(id), #"{"model":"m","messages":[{"role":"user","content":"new"}]}"#) }
            return true
        })
        guard case .completed(let notes) = executor.run(steps) else {
            Issue.record("the plan completes")
            return
        }
        #expect(notes == [.replacedByNewer(layout.request(id))])
        #expect(files.text(layout.request(id))?.contains("new") == true, "the newer request stays queued as a new task")
        #expect(files.text(layout.result(id)) == answer)
        // After a restart the newer file is not mistaken for the finished one.
        let identity = try? files.identity(of: layout.request(id))
        #expect(Recovery.decide(record: files.records[id], identity: identity, resultInode: files.files[layout.result(id)]?.inode) == .fresh)
    }

    /// On a shared spool a daemon can find a request through its mount's stale cache after
    /// the daemon that ended it removed it. Completing that task again must say nothing
    /// ended here: the unlink, not the lookup before it, tells.
    @Test func aRequestAnotherDaemonRemovedIsNotCompletedTwice() throws {
        let files = MemoryFiles()
        files.create(layout.request(id), requestText)
        let identity = try #require(try files.identity(of: layout.request(id)))
        let record = TaskRecord(id: id, status: .done, request: identity, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
        files.createRecord(record)
        let steps = PublicationPlan.completion(of: record, requestPath: layout.request(id), identity: identity, errorRecordExists: false, layout: layout)
        try files.unlinkIfPresent(layout.request(id))
        files.staleLookups[layout.request(id)] = identity
        guard case .completed(let notes) = PublicationExecutor(files: files).run(steps) else {
            Issue.record("the plan completes")
            return
        }
        #expect(notes == [.alreadyGone(layout.request(id))])
        // Without the stale lookup the check before the unlink says so as well.
        files.staleLookups = [:]
        guard case .completed(let again) = PublicationExecutor(files: files).run(steps) else {
            Issue.record("the plan completes")
            return
        }
        #expect(again == [.alreadyGone(layout.request(id))])
    }

    /// The same for a failed task's clean-up: the request another daemon moved to `failed/`
    /// is still found in `outgoing` by a stale cache, and the move must say it was gone, not
    /// fail (which logged an error and tried again on every scan).
    @Test func aFailedRequestAnotherDaemonMovedIsNotMovedTwice() throws {
        let files = MemoryFiles()
        files.create(layout.request(id), requestText)
        let identity = try #require(try files.identity(of: layout.request(id)))
        let record = TaskRecord(id: id, status: .failed, request: identity, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)),
                                errorRecord: Array("{}".utf8))
        files.createRecord(record)
        let steps = PublicationPlan.completion(of: record, requestPath: layout.request(id), identity: identity, errorRecordExists: true, layout: layout)
        try files.rename(layout.request(id), layout.failedRequest(id))
        files.staleLookups[layout.request(id)] = identity
        guard case .completed(let notes) = PublicationExecutor(files: files).run(steps) else {
            Issue.record("the plan completes")
            return
        }
        #expect(notes == [.alreadyGone(layout.request(id))])
        #expect(files.text(layout.failedRequest(id)) == requestText, "the failed request moved once stays as it was")
    }

    @Test func aNewerRequestIsNotMovedToFailedWithTheOldOnesRecord() {
        let (files, steps) = setUp(.finalFailure)
        let moveAt = steps.firstIndex { if case .moveIfSame = $0 { return true } else { return false } }!
        let executor = PublicationExecutor(files: files, beforeStep: { index, _ in
            if index == moveAt { files.create(layout.request(id), "edited in place") }
            return true
        })
        guard case .completed(let notes) = executor.run(steps) else {
            Issue.record("the plan completes")
            return
        }
        #expect(notes == [.replacedByNewer(layout.request(id))])
        #expect(files.text(layout.request(id)) == "edited in place")
        #expect(files.files[layout.failedRequest(id)] == nil)
    }

    @Test func anEarlierFailureOfTheSameIdIsArchivedNotOverwritten() {
        let (files, steps) = setUp(.rejection)
        files.create(layout.failedRequest(id), "the first fragment")
        files.create(layout.errorRecord(id), "the first record")
        files.create("\(layout.superseded)/1.\(id).json", "an even older one")
        guard case .completed = PublicationExecutor(files: files).run(steps) else {
            Issue.record("the plan completes")
            return
        }
        #expect(files.text(layout.failedRequest(id)) == requestText)
        #expect(files.text("\(layout.superseded)/2.\(id).json") == "the first fragment")
        #expect(files.text("\(layout.superseded)/1.\(id).error.json") == "the first record")
        #expect(files.text("\(layout.superseded)/1.\(id).json") == "an even older one")
    }

    @Test func aStepThatFailsStopsThePlanAndNamesTheStep() {
        let (files, steps) = setUp(.finalFailure)
        files.failing = layout.failed
        guard case .failed(let index, let step, let error) = PublicationExecutor(files: files).run(steps) else {
            Issue.record("a full failed/ folder fails the plan")
            return
        }
        #expect(step == steps[index])
        #expect(error.description.contains(layout.failed))
        #expect(files.files[layout.request(id)] != nil, "the request stays in outgoing")
    }

    @Test func aBatchStepThatFailsStopsOnlyItsOwnPlan() {
        let files = MemoryFiles()
        var commits: [[PublicationStep]] = []
        for id in ["a", "b"] {
            files.create(layout.request(id), requestText)
            files.create(layout.partial(id), answer)
            let task = TaskDescriptor(id: id, requestPath: layout.request(id), summary: RequestSummary(model: "m", stream: false, size: 1))
            let success = PublicationPlan.Success(task: task, record: TaskRecord(id: id, status: .done, request: nil, history: task.history),
                                                  source: layout.partial(id), streamed: false)
            commits.append(PublicationPlan.commit(success, layout: layout))
        }
        files.failing = layout.result("a")
        let failures = PublicationExecutor(files: files).runBatch(commits)
        #expect(failures[0] != nil)
        #expect(failures[1] == nil)
        #expect(files.files[layout.result("b")] != nil)
        #expect(files.files[layout.request("a")] != nil, "a's request stays queued")
    }
}
