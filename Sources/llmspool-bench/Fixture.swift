import Foundation
import Glibc
import LLMSpoolCore

/// The stub and the daemon as separate processes on a temporary spool, as a user runs
/// them, so that each one's CPU and memory can be read from /proc.
final class Fixture {
    let root: String
    let layout: SpoolLayout
    let binary: String
    private(set) var stub: Process?
    private(set) var daemon: Process?
    private(set) var stubURL = ""
    var stubPort: UInt16 { UInt16(stubURL.split(separator: ":").last?.split(separator: "/").first ?? "") ?? 0 }

    init() throws {
        root = NSTemporaryDirectory() + "llmspool-bench-\(UUID().uuidString)"
        try Syscall.mkdir(root, mode: 0o700)
        layout = SpoolLayout(root: root + "/spool")
        try layout.create()
        try Syscall.mkdir(root + "/staging", mode: 0o700)
        // LLMSPOOL_BENCH_BINARY runs another build's daemon and stub (a before-and-after
        // comparison in one run of this harness).
        binary = ProcessInfo.processInfo.environment["LLMSPOOL_BENCH_BINARY"]
            ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("llmspool").path
    }

    func startStub(_ extra: [String] = []) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["stub", "--port", "0"] + extra
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        stub = process
        var text = ""
        while !text.contains("\n") {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let range = text.range(of: #"http://127\.0\.0\.1:\d+/v1"#, options: .regularExpression) else { throw ConfigError("the stub did not start: \(text)") }
        stubURL = String(text[range])
    }

    /// Starts `llmspool run` and waits until its live status file exists.
    func startDaemon(concurrency: Int, extra: [String: Any] = [:]) throws {
        var settings: [String: Any] = ["spool": layout.root, "base_url": stubURL, "concurrency": concurrency, "log_level": "warning",
                                       "min_free_bytes": 0, "request_timeout_seconds": 3600, "idle_timeout_seconds": 600]
        settings.merge(extra) { $1 }
        let config = root + "/config.json"
        try DurableFile.write(Array(try JSONSerialization.data(withJSONObject: settings)), to: config)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["run", "--config", config]
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "OPENAI_BASE_URL")
        process.environment = environment
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/null"))
        try process.run()
        daemon = process
        let deadline = Date().addingTimeInterval(30)
        while LiveStatus.read(layout) == nil {
            guard Date() < deadline else { throw ConfigError("the daemon did not start") }
            usleep(5_000)
        }
    }

    /// Stops the daemon alone: the reference clients then have the stub to themselves,
    /// without the daemon's kept-alive connections (as many as its concurrency).
    func stopDaemon() {
        if let daemon, daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
        }
    }

    func stop() {
        for process in [daemon, stub].compactMap({ $0 }) where process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        daemon = nil
        stub = nil
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Writes `count` requests into a staging folder; `rename` then drops them at once.
    func stage(_ count: Int, prefix: String, _ request: (Int) -> [String: Any]) throws -> [String] {
        var ids: [String] = []
        ids.reserveCapacity(count)
        for index in 0..<count {
            let id = "\(prefix)\(index)"
            let bytes = Array(try JSONSerialization.data(withJSONObject: request(index)))
            let file = try FileDescriptor.open("\(root)/staging/\(id).json", O_WRONLY | O_CREAT | O_TRUNC)
            try file.writeAll(bytes)
            try file.close()
            ids.append(id)
        }
        return ids
    }

    func drop(_ ids: [String], into folder: String? = nil) throws {
        for id in ids { try Syscall.rename("\(root)/staging/\(id).json", "\(folder ?? layout.outgoing)/\(id).json") }
    }

    /// Waits until `count` results are in incoming; returns when that was seen.
    func waitForResults(_ count: Int, timeout: Double) throws -> Date {
        try ResultWatch.wait(folder: layout.incoming, count: count, timeout: timeout)
    }

    /// Arrival times at the stub, by prompt.
    func arrivals() throws -> [String: Double] {
        let body = try httpGet(port: stubPort, path: "/stub/requests")
        guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any], let list = object["requests"] as? [[String: Any]] else { return [:] }
        var times: [String: Double] = [:]
        for entry in list {
            guard let prompt = entry["prompt"] as? String, let at = entry["at"] as? Double else { continue }
            times[prompt] = min(times[prompt] ?? at, at)
        }
        return times
    }
}

/// CPU seconds and peak resident memory of a process, from /proc.
struct ProcessStats {
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func peakRSSMiB(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kb / 1024
    }
}

/// A minimal HTTP/1.0 GET to 127.0.0.1.
func httpGet(port: UInt16, path: String) throws -> Data {
    let opened = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard opened >= 0 else { throw ConfigError("socket: errno \(errno)") }
    let socketFile = FileDescriptor(owning: opened)
    let fd = socketFile.rawValue
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard connected == 0 else { throw ConfigError("connect: errno \(errno)") }
    let request = Array("GET \(path) HTTP/1.0\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    var response = Data()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { break }
        response.append(contentsOf: buffer[0..<count])
    }
    guard let split = response.range(of: Data("\r\n\r\n".utf8)) else { return Data() }
    return response[split.upperBound...]
}
