import CSystem
import Foundation
import Glibc
import Synchronization

/// A command to run when a task ends: an argument vector run as it is, or a line run by
/// `/bin/sh -c` when the configuration gives a string (the shell only when asked).
public enum HookCommand: Sendable, Equatable {
    case argv([String])
    case shell(String)

    var arguments: [String] {
        switch self {
        case .argv(let argv): argv
        case .shell(let line): ["/bin/sh", "-c", line]
        }
    }
}

/// Runs `on_complete` and `on_failure` hooks: at most `concurrency` at once, each killed
/// after `timeout`, on threads of their own so that no hook ever holds up a transfer. A
/// hook that fails is logged; nothing else happens.
public final class HookRunner: Sendable {
    /// The hooks' settings.
    public struct Settings: Sendable, Equatable {
        public var onComplete: HookCommand?
        public var onFailure: HookCommand?
        public var concurrency = 4
        public var timeoutSeconds = 60.0

        public init(onComplete: HookCommand? = nil, onFailure: HookCommand? = nil, concurrency: Int = 4, timeoutSeconds: Double = 60) {
            self.onComplete = onComplete
            self.onFailure = onFailure
            self.concurrency = concurrency
            self.timeoutSeconds = timeoutSeconds
        }
    }

    private let settings: Settings
    private let layout: SpoolLayout
    private let logger: Logger
    private let pool: WorkerPool?
    /// Whether the finisher notes each hook owed in `state/hooks` (`HookRecovery`): the
    /// note of a report's id goes once its hook has run.
    private let notesOwed: Bool

    public init(settings: Settings, layout: SpoolLayout, logger: Logger, notesOwed: Bool = false) {
        self.settings = settings
        self.layout = layout
        self.logger = logger
        let needed = settings.onComplete != nil || settings.onFailure != nil
        pool = needed ? WorkerPool(name: "hook", threads: max(1, settings.concurrency)) : nil
        self.notesOwed = notesOwed && needed
    }

    /// Whether a batch's end notes its hook: when either hook is configured (which one runs
    /// depends on the counts), and notes are kept.
    public var notesBatches: Bool { notesOwed }

    /// The outcomes the finisher notes a hook for: those with a hook, when notes are kept.
    public var notes: Finisher.HookNotes {
        Finisher.HookNotes(onComplete: notesOwed && settings.onComplete != nil, onFailure: notesOwed && settings.onFailure != nil)
    }

    /// The environment a hook gets for a report, or nil when no hook applies.
    public static func environment(for report: TaskReport, layout: SpoolLayout) -> [String: String]? {
        var variables = ["LLMSPOOL_ID": report.id, "LLMSPOOL_SPOOL": layout.root]
        switch report.outcome {
        case .succeeded(let path):
            variables["LLMSPOOL_STATUS"] = "done"
            variables["LLMSPOOL_RESULT"] = path
        case .failed(let record, _, _):
            variables["LLMSPOOL_STATUS"] = "failed"
            variables["LLMSPOOL_ERROR"] = record
        case .cancelled, .deferred:
            return nil
        }
        return variables
    }

    public func handle(_ report: TaskReport) {
        guard let pool, report.hook != .waitsForCleanUp else { return }
        let note = notesOwed ? layout.pendingHook(report.id, request: report.request) : nil
        guard let variables = HookRunner.environment(for: report, layout: layout) else {
            // Cancelled: no hook is owed. Deferred: the outcome, and its hook, come later.
            if case .cancelled = report.outcome, let note { removeNote(note, id: report.id) }
            return
        }
        dispatch(variables, id: report.id, note: note, on: pool)
    }

    /// Queues the hook the variables' status calls for, then removes its note once it has
    /// run. With no such hook configured, a note left by a configuration that had it goes.
    private func dispatch(_ variables: [String: String], id: String, note: String?, on pool: WorkerPool) {
        let command = variables["LLMSPOOL_STATUS"] == "done" ? settings.onComplete : settings.onFailure
        guard let command else {
            if let note { removeNote(note, id: id) }
            return
        }
        pool.submit { [self] in
            run(command, variables: variables, id: id)
            if let note { removeNote(note, id: id) }
        }
    }

    /// Runs the hooks a daemon that died owed (`HookRecovery`), before anything new ends:
    /// each note in `state/hooks` (and `state/batch-hooks`) whose outcome is proven
    /// published has its hook run, then goes. A hook may so run twice (the daemon died after
    /// it ran, before its note went), never not at all across a kill or a restart. Without
    /// notes (no hook, or a shared spool) the notes of an earlier run go, logged: a hook
    /// configured again later must not run for outcomes long past. Returns the hooks started.
    @discardableResult
    public func recoverOwed() -> Int {
        let requests = notes(in: layout.pendingHooks)
        let batches = notes(in: layout.pendingBatchHooks)
        guard notesOwed else {
            if !requests.isEmpty || !batches.isEmpty {
                logger.warning("hooks noted as owed by an earlier run are dropped: this run keeps no notes (no hook, or a shared spool)",
                               ["requests": "\(requests.count)", "batches": "\(batches.count)"])
            }
            for name in requests { removeNote(layout.pendingHooks + "/" + name, id: name) }
            for name in batches { removeNote(layout.pendingBatchHook(name), id: name) }
            return 0
        }
        var started = 0
        for name in requests where recoverRequest(note: layout.pendingHooks + "/" + name, name: name) { started += 1 }
        for name in batches where recoverBatch(name, note: layout.pendingBatchHook(name)) { started += 1 }
        return started
    }

    /// The names in a folder of notes, sorted; a note's hidden temporary, left by a daemon
    /// that died while writing it, is removed.
    private func notes(in folder: String) -> [String] {
        let names: [String]
        do {
            names = try Syscall.listDirectory(folder)
        } catch let error as SystemError where error.errno == ENOENT {
            return []
        } catch {
            logger.error("cannot read the hooks owed; they do not run", ["folder": LogValue(folder), "reason": "\(error)"])
            return []
        }
        var kept: [String] = []
        for name in names.sorted() {
            if name.hasPrefix(SpoolLayout.hiddenPrefix) {
                removeNote(folder + "/" + name, id: name)
            } else {
                kept.append(name)
            }
        }
        return kept
    }

    /// A request's hook owed (`HookRecovery.decide`); true when it was started.
    private func recoverRequest(note path: String, name: String) -> Bool {
        let mark: ResultMark?
        let id: String
        do {
            let content = try FileReader.prefix(path: path, limit: ResultMark.maximumSize)
            if content.isEmpty {
                // The request's identity was not known: the note is named by the id alone.
                (mark, id) = (nil, name)
            } else {
                switch ResultMark.parse(content) {
                case .success(let parsed): (mark, id) = (parsed, parsed.id)
                case .failure(let problem):
                    logger.warning("a note of a hook owed cannot be read; it is dropped", ["note": LogValue(path), "problem": LogValue(problem.description)])
                    removeNote(path, id: name)
                    return false
                }
            }
        } catch {
            logger.warning("cannot read a note of a hook owed; it stays for the next start", ["note": LogValue(path), "reason": "\(error)"])
            return false
        }
        let decision: HookRecovery.Decision
        do {
            decision = HookRecovery.decide(id: id, note: mark, found: try found(id))
        } catch {
            logger.warning("cannot tell whether a hook is owed; its note stays for the next start", id: id, ["reason": "\(error)"])
            return false
        }
        let outcome: TaskReport.Outcome
        switch decision {
        case .leaveToTheRequest:
            return false
        case .drop:
            logger.info("a hook noted as owed has no outcome to run for; the note goes", id: id)
            removeNote(path, id: id)
            return false
        case .runOnComplete:
            outcome = .succeeded(resultPath: layout.result(id))
        case .runOnFailure:
            outcome = .failed(recordPath: layout.errorRecord(id), kind: .invalidRequest, message: "owed before a restart")
        case .writeErrorRecordThenRunOnFailure:
            guard let record = TaskRecord.load(layout, id: id) else { return false }
            do {
                guard try SpoolFiles(layout: layout).writeErrorRecord(from: record) else { return false }
            } catch {
                logger.warning("a failure's error record cannot be written yet; its hook stays owed for the next start", id: id,
                               ["record": LogValue(layout.errorRecord(id)), "reason": "\(error)"])
                return false
            }
            logger.info("the error record of a failure whose request was deleted is written from its task record", id: id)
            outcome = .failed(recordPath: layout.errorRecord(id), kind: .invalidRequest, message: "owed before a restart")
        }
        logger.info("running a hook owed from before the restart", id: id)
        handle(TaskReport(id: id, outcome: outcome, request: mark?.request))
        return true
    }

    /// What the spool holds for an id now, for `HookRecovery.decide`.
    private func found(_ id: String) throws -> HookRecovery.Found {
        let identity = SpoolFiles(layout: layout).identity(of:)
        var found = HookRecovery.Found()
        for suffix in RequestFormatRegistry.suffixes {
            if found.queued == nil { found.queued = try identity(layout.outgoing + "/" + id + suffix) }
            if found.failedRequest == nil { found.failedRequest = try identity(layout.failed + "/" + id + suffix) }
        }
        found.record = TaskRecord.load(layout, id: id)
        found.resultInode = try identity(layout.result(id))?.inode
        if found.resultInode != nil { found.resultMark = ResultMarkReader.read(layout.result(id), id: id, logger: logger) }
        found.errorRecordExists = try Syscall.exists(layout.errorRecord(id))
        return found
    }

    private func removeNote(_ note: String, id: String) {
        logger.bestEffort("removing the note of a hook owed", id: id) { _ = try Syscall.unlinkIfPresent(note) }
    }

    /// The variables of a batch's hook: once per batch, with its counts.
    public static func environment(forBatch report: BatchRunner.EndReport, layout: SpoolLayout) -> [String: String] {
        var variables = ["LLMSPOOL_ID": report.name, "LLMSPOOL_SPOOL": layout.root, "LLMSPOOL_BATCH": "1",
                         "LLMSPOOL_BATCH_STATUS": report.status, "LLMSPOOL_BATCH_TOTAL": "\(report.total)",
                         "LLMSPOOL_BATCH_SUCCEEDED": "\(report.succeeded)", "LLMSPOOL_BATCH_FAILED": "\(report.failed)"]
        if report.status == "failed" {
            variables["LLMSPOOL_STATUS"] = "failed"
            variables["LLMSPOOL_ERROR"] = report.summaryPath
        } else {
            variables["LLMSPOOL_STATUS"] = report.status == "completed" && report.failed == 0 ? "done" : "failed"
            variables["LLMSPOOL_RESULT"] = report.outputPath
            variables["LLMSPOOL_SUMMARY"] = report.summaryPath
        }
        return variables
    }

    /// Runs `on_complete` for a batch whose every line succeeded, `on_failure` otherwise.
    public func handleBatch(_ report: BatchRunner.EndReport) {
        guard let pool else { return }
        let note = notesOwed ? layout.pendingBatchHook(report.name) : nil
        dispatch(HookRunner.environment(forBatch: report, layout: layout), id: report.name, note: note, on: pool)
    }

    /// A batch's hook owed (`HookRecovery.decideBatch`); false when its note must stay.
    private func recoverBatch(_ name: String, note: String) -> Bool {
        let decision: HookRecovery.BatchDecision
        do {
            decision = HookRecovery.decideBatch(inputPresent: try Syscall.exists(layout.batchRequest(name)),
                                                journalPresent: try Syscall.exists(layout.batchJournal(name)),
                                                summaryExists: try Syscall.exists(layout.batchSummary(name)),
                                                refused: try Syscall.exists(layout.failedBatch(name)) && Syscall.exists(layout.batchErrorRecord(name)))
        } catch {
            logger.warning("cannot tell whether a batch's hook is owed; its note stays for the next start", id: name, ["reason": "\(error)"])
            return false
        }
        switch decision {
        case .leaveToTheBatch:
            return false
        case .drop:
            removeNote(note, id: name)
            return false
        case .runRefused:
            logger.info("running a hook owed from before the restart", id: name)
            handleBatch(BatchRunner.EndReport(name: name, status: "failed", total: 0, succeeded: 0, failed: 0, outputPath: layout.failedBatch(name),
                                              summaryPath: layout.batchErrorRecord(name)))
            return true
        case .runFromSummary:
            let end: BatchSummary.End?
            do {
                end = BatchSummary.end(of: try FileReader.prefix(path: layout.batchSummary(name), limit: 1 << 20))
            } catch {
                logger.warning("cannot read a batch's summary; its hook owed waits for the next start", id: name, ["reason": "\(error)"])
                return false
            }
            guard let end else {
                logger.warning("a batch's summary cannot be read back; its hook owed does not run", id: name,
                               ["summary": LogValue(layout.batchSummary(name))])
                return false
            }
            logger.info("running a hook owed from before the restart", id: name)
            handleBatch(BatchRunner.EndReport(name: name, status: end.status, total: end.total, succeeded: end.completed, failed: end.failed,
                                              outputPath: layout.batchOutput(name), summaryPath: layout.batchSummary(name)))
            return true
        }
    }

    /// Waits for running hooks, then stops the hook threads.
    public func finish() {
        pool?.finish()
    }

    private func run(_ command: HookCommand, variables: [String: String], id: String) {
        let environment = HookEnvironment.build(daemon: ProcessInfo.processInfo.environment, task: variables)
        let argv = command.arguments
        let output: (read: Int32, write: Int32)
        do {
            output = try Syscall.nonBlockingPipe()
        } catch {
            logger.warning("hook could not start", id: id, ["command": LogValue(argv[0]), "reason": "\(error)"])
            return
        }
        var readEnd: FileDescriptor? = FileDescriptor(owning: output.read)
        let writeEnd = FileDescriptor(owning: output.write)
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Both streams into one pipe, read here: a hook's words reach the log escaped and
        // bounded, never the daemon's stderr raw.
        posix_spawn_file_actions_adddup2(&actions, output.write, 1)
        posix_spawn_file_actions_adddup2(&actions, output.write, 2)
        // Nothing else of the daemon's: its sockets, spool files and whatever it inherited
        // would stay open in every child a hook leaves behind.
        llms_spawn_close_from(&actions, 3)
        // Its own process group: a hook past its time is killed with every child it started
        // that stayed in the group (a `sleep` that ignores SIGTERM outlived the hook).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The signals the daemon ignores (a dead log reader's SIGPIPE, the ones it handles
        // itself) are the default again in the hook, as in any program a shell starts.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let started = Date()
        let spawned = posix_spawnp(&pid, argv[0], &actions, &attributes, cArgs, cEnv)
        // The child holds its own copies; the parent's write end goes, so the read end sees
        // the end of the output when the child exits.
        do {
            try writeEnd.close()
        } catch {
            logger.warning("cannot close a hook's pipe", id: id, ["command": LogValue(argv[0]), "reason": "\(error)"])
        }
        guard spawned == 0 else {
            logger.warning("hook could not start", id: id, ["command": LogValue(argv[0]), "reason": LogValue(String(cString: strerror(spawned)))])
            return
        }
        var captured = HookOutput()
        func drain() {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while let number = readEnd?.rawValue {
                do {
                    let count = try buffer.withUnsafeMutableBytes { try Syscall.read(number, into: $0) }
                    if count == 0 {
                        readEnd = nil
                        return
                    }
                    captured.append(buffer[0..<count])
                } catch let error as SystemError where error.errno == EAGAIN {
                    return
                } catch {
                    logger.warning("cannot read a hook's output", id: id, ["command": LogValue(argv[0]), "reason": "\(error)"])
                    readEnd = nil
                    return
                }
            }
        }
        var status: Int32 = 0
        var timedOut = false
        while true {
            drain()
            do {
                let changed = try Syscall.waitpid(pid, options: WNOHANG)
                if changed.pid == pid {
                    status = changed.status
                    break
                }
            } catch {
                logger.warning("cannot wait for a hook", id: id, ["command": LogValue(argv[0]), "reason": "\(error)"])
                break
            }
            if Date().timeIntervalSince(started) > settings.timeoutSeconds && !timedOut {
                timedOut = true
                kill(-pid, SIGKILL)
            }
            usleep(20_000)
        }
        // What is left in the pipe; a child the hook left behind may hold it open, so no more is awaited.
        drain()
        let exitCode = (status >> 8) & 0xFF
        let signaled = status & 0x7F
        var fields: [(String, String)] = [("command", argv[0])]
        if !captured.kept.isEmpty { fields.append(("output", captured.text)) }
        if timedOut {
            logger.log(.warning, "hook killed after hook_timeout_seconds", id: id, fields + [("timeout_seconds", "\(settings.timeoutSeconds)")])
        } else if signaled != 0 || exitCode != 0 {
            logger.log(.warning, "hook failed", id: id, fields + [("exit_status", "\(exitCode)"), ("signal", "\(signaled)")])
        } else {
            logger.log(.info, "hook ran", id: id, fields + [("seconds", String(format: "%.3f", Date().timeIntervalSince(started)))])
        }
    }
}
