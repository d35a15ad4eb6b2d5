import Foundation
import Glibc
import LLMSpoolCore
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
    private var daemon: Process?
    private(set) var daemonLog: String

    init() throws {
        root = NSTemporaryDirectory() + "llmspool-it-\(UUID().uuidString)"
        try Syscall.mkdir(root, mode: 0o700)
        layout = SpoolLayout(root: root + "/spool")
        try layout.create()
        daemonLog = root + "/daemon.log"
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
    /// never reach a file.
    func startDaemon(config: [String: Any] = [:], arguments: [String] = []) throws {
        // Fast retries and no cool-down unless a test asks: each test sees its own rules.
        var settings: [String: Any] = ["spool": layout.root, "base_url": stubURL, "log_level": "debug", "rescan_interval_seconds": 60,
                                       "retry_initial_seconds": 0.05, "cooldown_after_failures": 1000]
        settings.merge(config) { $1 }
        let configPath = root + "/config.json"
        try DurableFile.write(Array(try JSONSerialization.data(withJSONObject: settings)), to: configPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Harness.binary)
        process.arguments = ["run", "--config", configPath] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAI_API_KEY"] = Harness.secret
        environment.removeValue(forKey: "OPENAI_BASE_URL")
        process.environment = environment
        _ = FileManager.default.createFile(atPath: daemonLog, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: daemonLog))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        daemon = process
        try waitUntil("the daemon is watching", timeout: 20) { self.log.contains("watching") }
    }

    var log: String {
        (try? String(contentsOfFile: daemonLog, encoding: .utf8)) ?? ""
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

    func stop() {
        stopDaemon()
        if let stub {
            if stub.isRunning { stub.terminate() }
            stub.waitUntilExit()
            self.stub = nil
        }
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
