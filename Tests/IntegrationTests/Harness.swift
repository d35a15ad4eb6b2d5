import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Runs the real `llmspool` binary (daemon and stub) on a temporary spool, and cleans up:
/// every process it starts is killed and reaped by `stop()`.
final class Harness: @unchecked Sendable {
    // @unchecked Sendable holds because a harness belongs to one test, which calls it from
    // one task at a time.

    static let secret = "sk-test-SECRET-5f1a9c"

    /// The built `llmspool`, beside the test bundle.
    static var binary: String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("llmspool").path
    }

    let root: String
    let layout: SpoolLayout
    private(set) var stubURL = ""
    private var stub: Process?
    private(set) var daemon: Process?
    private(set) var daemonLog: String

    private var mounted: String?

    /// `tmpfsBytes` puts the spool on a tmpfs of that size (root only), for a real full disk.
    init(tmpfsBytes: Int? = nil) throws {
        root = NSTemporaryDirectory() + "llmspool-it-\(UUID().uuidString)"
        try Syscall.mkdir(root, mode: 0o700)
        let spool = root + "/spool"
        if let tmpfsBytes {
            try Syscall.mkdir(spool, mode: 0o700)
            try Harness.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(tmpfsBytes)", "tmpfs", spool])
            mounted = spool
        }
        layout = SpoolLayout(root: spool)
        try layout.create()
        daemonLog = root + "/daemon.log"
        _ = FileManager.default.createFile(atPath: daemonLog, contents: nil)
    }

    /// Runs a program to its end; throws when it fails (output in the message).
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> String {
        let finished = try spawnAndWait([program] + arguments)
        guard finished.status == 0 else {
            throw HarnessError("\(program) \(arguments.joined(separator: " ")) exited \(finished.status): \(finished.stdout)\(finished.stderr)")
        }
        return finished.stdout + finished.stderr
    }

    /// posix_spawn and waitpid rather than Foundation's Process, which notices a child's
    /// exit through a descriptor that a daemon the child leaves behind (tmux's server)
    /// keeps open for ever. Output goes through files, not pipes, for the same reason.
    static func spawnAndWait(_ argv: [String], stdin: String = "", environment: [String: String]? = nil) throws -> Finished {
        let base = NSTemporaryDirectory() + "llmspool-spawn-\(UUID().uuidString)"
        let (out, err, input) = (base + ".out", base + ".err", base + ".in")
        try stdin.write(toFile: input, atomically: false, encoding: .utf8)
        defer { for path in [out, err, input] { unlink(path) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArgs, cEnv)
        guard spawned == 0 else { throw HarnessError("cannot start \(argv[0]): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // WIFEXITED and WEXITSTATUS, which Swift does not import; a signal counts as failure.
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Finished(status: code, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                        stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// A finished command: its exit status and what it printed on each stream.
    struct Finished {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `llmspool` with `arguments` to its end, without the test's key in its environment.
    func cli(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> Finished {
        var merged = ProcessInfo.processInfo.environment
        merged["OPENAI_API_KEY"] = nil
        merged["LLMSPOOL_CONFIG"] = nil
        merged.merge(environment) { $1 }
        return try Harness.spawnAndWait([Harness.binary] + arguments, stdin: stdin ?? "", environment: merged)
    }

    static var isRoot: Bool { getuid() == 0 }

    static func which(_ program: String) -> String? {
        for directory in ["/usr/bin", "/bin", "/usr/local/bin"] where FileManager.default.isExecutableFile(atPath: "\(directory)/\(program)") {
            return "\(directory)/\(program)"
        }
        return nil
    }

    /// Starts the stub on a free port and waits for its "listening on" line.
    func startStub(_ extra: [String] = []) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Harness.binary)
        process.arguments = ["stub", "--port", "0"] + extra
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        stub = process
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while !text.contains("\n") && Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let range = text.range(of: #"http://127\.0\.0\.1:\d+/v1"#, options: .regularExpression) else {
            throw HarnessError("the stub did not report its address: \(text)")
        }
        stubURL = String(text[range])
    }

    /// Starts `llmspool run` against the stub, with a key in its environment that must
    /// never reach a file. Its log is appended to `daemonLog` across restarts.
    /// `openFilesLimit` starts the daemon under that open-files limit (soft and hard).
    func startDaemon(config: [String: Any] = [:], arguments: [String] = [], environment extra: [String: String] = [:],
                     waitUntilWatching: Bool = true, openFilesLimit: Int? = nil) throws {
        try writeConfig(config)
        let watchingBefore = watchingLines
        daemon = try Harness.spawnDaemon(["run", "--config", configPath] + arguments, log: daemonLog, environment: extra,
                                         openFilesLimit: openFilesLimit)
        if waitUntilWatching {
            try waitUntil("the daemon is watching", timeout: 20) {
                self.watchingLines > watchingBefore
            }
        }
    }

    /// Another daemon on the same spool, with its own config and log: for the shared-spool
    /// tests. Stopped by `stop()` like the first.
    func startExtraDaemon(_ name: String, config: [String: Any], environment: [String: String] = [:]) throws -> Process {
        var settings: [String: Any] = ["spool": layout.root, "base_url": stubURL, "log_level": "debug", "retry_initial_seconds": 0.05,
                                       "cooldown_after_failures": 1000]
        settings.merge(config) { $1 }
        let path = "\(root)/\(name).json"
        try DurableFile.write(Array(try JSONSerialization.data(withJSONObject: settings)), to: path)
        let logPath = "\(root)/\(name).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = try Harness.spawnDaemon(["run", "--config", path], log: logPath, environment: environment)
        extraDaemons.append(process)
        try waitUntil("\(name) is watching", timeout: 20) {
            ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").contains("info: watching outgoing=")
        }
        return process
    }

    func extraLog(_ name: String) -> String {
        (try? String(contentsOfFile: "\(root)/\(name).log", encoding: .utf8)) ?? ""
    }

    private var extraDaemons: [Process] = []

    /// Starts `llmspool` in the background with the test key in its environment, its stderr
    /// appended to `log`.
    static func spawnDaemon(_ arguments: [String], log: String, environment extra: [String: String], openFilesLimit: Int? = nil) throws -> Process {
        let process = Process()
        if let openFilesLimit {
            // The shell lowers the limit and execs the daemon, which keeps its pid.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(openFilesLimit) && exec \"$0\" \"$@\"", Harness.binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Harness.binary)
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAI_API_KEY"] = Harness.secret
        environment.removeValue(forKey: "OPENAI_BASE_URL")
        environment.merge(extra) { $1 }
        process.environment = environment
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()
        process.standardError = handle
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// How many times a daemon said it is watching, in text or JSON logs.
    var watchingLines: Int {
        let log = self.log
        return log.components(separatedBy: "info: watching outgoing=").count + log.components(separatedBy: #""msg":"watching","outgoing""#).count - 2
    }

    /// Waits for a daemon that was told to stop to exit by itself; returns its exit status.
    func waitForDaemonExit(timeout: TimeInterval = 30) throws -> Int32 {
        guard let daemon else { return -1 }
        try waitUntil("the daemon exits", timeout: timeout) { !daemon.isRunning }
        daemon.waitUntilExit()
        self.daemon = nil
        return daemon.terminationStatus
    }

    var configPath: String { root + "/config.json" }

    /// Writes the daemon's config file: the harness's defaults overridden by `config`.
    func writeConfig(_ config: [String: Any]) throws {
        // Fast retries and no cool-down unless a test asks: each test sees its own rules.
        var settings: [String: Any] = ["spool": layout.root, "base_url": stubURL, "log_level": "debug", "rescan_interval_seconds": 60,
                                       "retry_initial_seconds": 0.05, "cooldown_after_failures": 1000]
        settings.merge(config) { $1 }
        try DurableFile.write(Array(try JSONSerialization.data(withJSONObject: settings)), to: configPath)
    }

    var log: String {
        (try? String(contentsOfFile: daemonLog, encoding: .utf8)) ?? ""
    }

    /// The port the daemon's metrics listen on, as it logged it (`--metrics 127.0.0.1:0`).
    func metricsPort() throws -> UInt16 {
        let text = try #require(log.range(of: #"serving metrics address=127\.0\.0\.1:0 port=\d+"#, options: .regularExpression)
            .map { String(log[$0].split(separator: "=").last!) })
        return try #require(UInt16(text))
    }

    /// The value of the sample `series` (a name with its labels, as the text has it) in
    /// the metrics now.
    func metric(_ series: String, port: UInt16) throws -> Double {
        let text = String(decoding: try LoopbackGet.body(port: port, path: "/metrics"), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }),
              let value = Double(line.split(separator: " ").last!) else { throw HarnessError("no \(series) in the metrics") }
        return value
    }

    /// Sends SIGTERM and waits for the daemon to exit; returns its exit status.
    @discardableResult
    func stopDaemon() -> Int32 {
        guard let daemon else { return -1 }
        if daemon.isRunning { daemon.terminate() }
        daemon.waitUntilExit()
        self.daemon = nil
        return daemon.terminationStatus
    }

    /// SIGKILL: the daemon gets no chance to clean up.
    func killDaemon() {
        guard let daemon else { return }
        if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
        daemon.waitUntilExit()
        self.daemon = nil
    }

    func signalDaemon(_ number: Int32) {
        if let daemon, daemon.isRunning { kill(daemon.processIdentifier, number) }
    }

    var daemonIsRunning: Bool { daemon?.isRunning ?? false }

    func stop() {
        stopDaemon()
        for process in extraDaemons {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        extraDaemons.removeAll()
        if let stub {
            if stub.isRunning { stub.terminate() }
            stub.waitUntilExit()
            self.stub = nil
        }
        if let mounted { _ = try? Harness.run("/bin/umount", ["-l", mounted]) }
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Drops a request the way producers should: a dot-file, then a rename.
    func drop(_ id: String, _ request: [String: Any]) throws {
        try drop(id, bytes: Array(try JSONSerialization.data(withJSONObject: request)))
    }

    func drop(_ id: String, bytes: [UInt8]) throws {
        let hidden = "\(layout.outgoing)/.\(id).json.tmp"
        try DurableFile.write(bytes, to: hidden, syncDirectory: false)
        try Syscall.rename(hidden, layout.request(id))
    }

    static func request(_ prompt: String, stream: Bool = false, stub: [String: Any]? = nil) -> [String: Any] {
        var request: [String: Any] = ["model": "stub-model", "messages": [["role": "user", "content": prompt]]]
        if stream { request["stream"] = true }
        if let stub { request["stub"] = stub }
        return request
    }

    func files(in directory: String) -> [String] {
        ((try? Syscall.listDirectory(directory)) ?? []).sorted()
    }

    func json(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw HarnessError("\(path) is not a JSON object")
        }
        return object
    }

    static func content(of result: [String: Any]) -> String? {
        ((result["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
    }

    /// What the stub saw: one entry per request that reached it, in order.
    func stubArrivals() throws -> [(prompt: String, attempt: Int, at: Double)] {
        guard let port = UInt16(stubURL.split(separator: ":").last?.split(separator: "/").first ?? "") else {
            throw HarnessError("no port in \(stubURL)")
        }
        let data = try LoopbackGet.body(port: port, path: "/stub/requests")
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let entries = object["requests"] as? [[String: Any]] else { throw HarnessError("bad /stub/requests answer") }
        return entries.map { ($0["prompt"] as? String ?? "", $0["attempt"] as? Int ?? 0, $0["at"] as? Double ?? 0) }
    }

    /// Every post the stub saw: its prompt, the path it went to and when (the stub's clock), in order.
    func stubPosts() throws -> [(prompt: String, path: String, at: Double)] {
        guard let port = UInt16(stubURL.split(separator: ":").last?.split(separator: "/").first ?? "") else {
            throw HarnessError("no port in \(stubURL)")
        }
        let data = try LoopbackGet.body(port: port, path: "/stub/requests")
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let entries = object["requests"] as? [[String: Any]] else { throw HarnessError("bad /stub/requests answer") }
        return entries.map { ($0["prompt"] as? String ?? "", $0["path"] as? String ?? "", $0["at"] as? Double ?? 0) }
    }

    /// Every post the stub saw, with the path it went to, in order.
    func stubArrivalPaths() throws -> [(prompt: String, path: String)] {
        guard let port = UInt16(stubURL.split(separator: ":").last?.split(separator: "/").first ?? "") else {
            throw HarnessError("no port in \(stubURL)")
        }
        let data = try LoopbackGet.body(port: port, path: "/stub/requests")
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let entries = object["requests"] as? [[String: Any]] else { throw HarnessError("bad /stub/requests answer") }
        return entries.map { ($0["prompt"] as? String ?? "", $0["path"] as? String ?? "") }
    }

    /// The paths the stub saw a prompt posted to, in order.
    func arrivalPaths(of prompt: String) throws -> [String] {
        guard let port = UInt16(stubURL.split(separator: ":").last?.split(separator: "/").first ?? "") else {
            throw HarnessError("no port in \(stubURL)")
        }
        let data = try LoopbackGet.body(port: port, path: "/stub/requests")
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let entries = object["requests"] as? [[String: Any]] else { throw HarnessError("bad /stub/requests answer") }
        return entries.filter { $0["prompt"] as? String == prompt }.map { $0["path"] as? String ?? "" }
    }

    func arrivals(of prompt: String) throws -> [Double] {
        try stubArrivals().filter { $0.prompt == prompt }.map(\.at)
    }

    func record(_ id: String) throws -> [String: Any] {
        try json(layout.taskRecord(id))
    }

    /// Every file under the harness folder whose bytes contain the test key.
    func filesContainingSecret() -> [String] {
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let relative = enumerator?.nextObject() as? String {
            let path = root + "/" + relative
            if let data = FileManager.default.contents(atPath: path),
               data.range(of: Data(Harness.secret.utf8)) != nil {
                found.append(relative)
            }
        }
        return found
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds; fails with `what` when the timeout passes first.
func waitUntil(_ what: String, timeout: TimeInterval, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return }
        if Date() >= deadline { throw HarnessError("timed out after \(timeout) s waiting until \(what)") }
        usleep(20_000)
    }
}
