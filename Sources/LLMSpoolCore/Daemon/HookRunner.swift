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

    public init(settings: Settings, layout: SpoolLayout, logger: Logger) {
        self.settings = settings
        self.layout = layout
        self.logger = logger
        let needed = settings.onComplete != nil || settings.onFailure != nil
        pool = needed ? WorkerPool(name: "hook", threads: max(1, settings.concurrency)) : nil
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
        guard let pool, let variables = HookRunner.environment(for: report, layout: layout) else { return }
        let command = variables["LLMSPOOL_STATUS"] == "done" ? settings.onComplete : settings.onFailure
        guard let command else { return }
        pool.submit { [self] in run(command, variables: variables, id: report.id) }
    }

    /// Waits for running hooks, then stops the hook threads.
    public func finish() {
        pool?.finish()
    }

    private func run(_ command: HookCommand, variables: [String: String], id: String) {
        var environment = ProcessInfo.processInfo.environment
        // The hook gets the task, never the key.
        for (key, _) in environment where key.hasSuffix("API_KEY") { environment[key] = nil }
        environment.merge(variables) { $1 }
        let argv = command.arguments
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
        var pid: pid_t = 0
        let started = Date()
        let spawned = posix_spawnp(&pid, argv[0], &actions, nil, cArgs, cEnv)
        guard spawned == 0 else {
            logger.warning("hook could not start", id: id, ["command": argv[0], "reason": String(cString: strerror(spawned))])
            return
        }
        var status: Int32 = 0
        var timedOut = false
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result == -1 && errno != EINTR { break }
            if Date().timeIntervalSince(started) > settings.timeoutSeconds && !timedOut {
                timedOut = true
                kill(pid, SIGKILL)
            }
            usleep(20_000)
        }
        let exitCode = (status >> 8) & 0xFF
        let signaled = status & 0x7F
        if timedOut {
            logger.warning("hook killed after hook_timeout_seconds", id: id, ["command": argv[0], "timeout_seconds": "\(settings.timeoutSeconds)"])
        } else if signaled != 0 || exitCode != 0 {
            logger.warning("hook failed", id: id, ["command": argv[0], "exit_status": "\(exitCode)", "signal": "\(signaled)"])
        } else {
            logger.debug("hook ran", id: id, ["command": argv[0], "seconds": String(format: "%.3f", Date().timeIntervalSince(started))])
        }
    }
}
