import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Running it for real: init, check-config, systemd notifications, metrics, logs.
@Suite(.serialized) struct OperationsTests {
    @Test func initThenCheckConfigOnAFreshFolder() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let spool = harness.root + "/fresh"
        let created = try harness.cli(["init", spool])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.contains("spool ready: \(spool)"))
        for folder in ["", "/outgoing", "/incoming", "/failed", "/state"] {
            #expect(try Syscall.lstat(spool + folder).st_mode & 0o777 == 0o700, "\(folder)")
        }
        let config = spool + "/config.json"
        #expect(try Syscall.lstat(config).st_mode & 0o777 == 0o600)
        #expect(try Config.load(path: config).spool == spool)
        let checked = try harness.cli(["check-config", "--config", config], environment: ["OPENAI_API_KEY": Harness.secret])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stdout.contains("spool = \(spool)"))
        #expect(checked.stdout.contains("api key: set (from $OPENAI_API_KEY)"))
        #expect(checked.stdout.contains("configuration OK"))
        #expect(!checked.stdout.contains(Harness.secret), "the key is never printed")
        // A second init keeps the config; --group opens the folders to the group.
        #expect(try harness.cli(["init", spool]).stdout.contains("kept the existing"))
        let grouped = harness.root + "/grouped"
        #expect(try harness.cli(["init", grouped, "--group", "root"]).status == 0)
        #expect(try Syscall.lstat(grouped + "/outgoing").st_mode & 0o7777 == 0o3770)
        #expect(try Syscall.lstat(grouped + "/incoming").st_mode & 0o7777 == 0o2750)
        #expect(try harness.cli(["init", grouped, "--group"]).status == 2, "--group names the group")
        #expect(try Config.load(path: grouped + "/config.json").groupReadable)
        // --spool DIR, as every other command names its spool; a typo names what was meant.
        let named = harness.root + "/named"
        let viaOption = try harness.cli(["init", "--spool", named])
        #expect(viaOption.status == 0, "\(viaOption.stderr)")
        #expect(try Config.load(path: named + "/config.json").spool == named)
        #expect(try harness.cli(["init", "--spool", named, harness.root + "/other"]).status == 2, "DIR and --spool disagree")
        #expect(!Syscall.isPresent(harness.root + "/other"))
        let typo = try harness.cli(["init", "--spol", named])
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("unknown option --spol (did you mean --spool?)"), "\(typo.stderr)")
        // A broken config is refused with its problem.
        try #"{"concurrency": "many"}"#.write(toFile: harness.root + "/bad.json", atomically: false, encoding: .utf8)
        _ = chmod(harness.root + "/bad.json", 0o600)
        let bad = try harness.cli(["check-config", "--config", harness.root + "/bad.json"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("\"concurrency\" must be a number"))
    }

    @Test func systemdHearsReadyStatusWatchdogAndStopping() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let socketPath = harness.root + "/notify.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in socketPath.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var messages: [String] = []
        func receive(until what: String, within seconds: Double) throws {
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !messages.contains(where: { $0.hasPrefix(what) }) {
                guard Date() < deadline else { throw HarnessError("no \(what) within \(seconds) s; got \(messages)") }
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 { messages.append(String(decoding: buffer[0..<count], as: UTF8.self)) }
            }
        }
        try harness.startDaemon(environment: ["NOTIFY_SOCKET": socketPath, "WATCHDOG_USEC": "1000000"])
        try receive(until: "READY=1", within: 10)
        try receive(until: "STATUS=", within: 10)
        try receive(until: "WATCHDOG=1", within: 10)
        #expect(messages.first { $0.hasPrefix("STATUS=") }?.contains("queued") == true)
        // Held (a folder made a link) is alive: the watchdog is still fed. Before, it was
        // not, and systemd would kill the daemon 30 s into the hold.
        let outside = harness.root + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        try #require(rename(harness.layout.incoming, harness.layout.incoming + ".real") == 0)
        try #require(symlink(outside, harness.layout.incoming) == 0)
        try receive(until: "STATUS=held: ", within: 10)
        messages.removeAll()
        try receive(until: "WATCHDOG=1", within: 5)
        try #require(unlink(harness.layout.incoming) == 0)
        try #require(rename(harness.layout.incoming + ".real", harness.layout.incoming) == 0)
        harness.signalDaemon(SIGTERM)
        try receive(until: "STOPPING=1", within: 10)
        #expect(try harness.waitForDaemonExit() == 0)
    }

    @Test func metricsAreScrapedAndParsed() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(arguments: ["--metrics", "127.0.0.1:0"])
        try harness.drop("m1", Harness.request("counted", stream: true))
        try harness.drop("m2", Harness.request("counted too", stub: ["faults": [["status": 503]]]))
        try harness.drop("m3", Harness.request("refused", stub: ["status": 400]))
        try waitUntil("three outcomes", timeout: 20) {
            FileManager.default.fileExists(atPath: harness.layout.result("m1")) && FileManager.default.fileExists(atPath: harness.layout.result("m2"))
                && FileManager.default.fileExists(atPath: harness.layout.errorRecord("m3"))
        }
        let port = try harness.metricsPort()
        var samples: [String: Double] = [:]
        try waitUntil("the counters settle", timeout: 10) {
            let text = String(decoding: try LoopbackGet.body(port: port, path: "/metrics"), as: UTF8.self)
            samples = [:]
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let value = Double(parts[1]) else { throw HarnessError("not a sample: \(line)") }
                samples[String(parts[0])] = value
            }
            // A result appears before its outcome is counted (the request's removal comes between).
            return samples["llmspool_requests_total{outcome=\"failed\"}"] == 1 && samples["llmspool_requests_total{outcome=\"done\"}"] == 2
        }
        #expect(samples["llmspool_requests_total{outcome=\"done\"}"] == 2)
        #expect(samples["llmspool_retries_total{reason=\"http\"}"] == 1)
        #expect(samples["llmspool_attempt_seconds_count"] == 4)
        #expect(samples["llmspool_first_byte_seconds_bucket{le=\"+Inf\"}"] == 4)
        #expect((samples["llmspool_tokens_total{kind=\"completion\"}"] ?? 0) == 16)
        #expect((samples["llmspool_received_bytes_total"] ?? 0) > 0)
        #expect(samples["llmspool_watcher_rescans_total{reason=\"start\"}"] == 1)
        #expect(samples["llmspool_in_flight"] == 0)
        // The same, per endpoint.
        let attemptKey = try #require(samples.keys.first { $0.hasPrefix("llmspool_endpoint_attempts_total{endpoint=\"") }, "no endpoint label")
        let name = String(attemptKey.dropFirst("llmspool_endpoint_attempts_total{endpoint=\"".count).prefix { $0 != "\"" })
        let label = "endpoint=\"\(name)\""
        #expect(samples["llmspool_endpoint_attempts_total{\(label),result=\"2xx\"}"] == 2)
        #expect(samples["llmspool_endpoint_attempts_total{\(label),result=\"4xx\"}"] == 1)
        #expect(samples["llmspool_endpoint_attempts_total{\(label),result=\"5xx\"}"] == 1)
        #expect(samples["llmspool_endpoint_retries_total{\(label),reason=\"http\"}"] == 1)
        #expect(samples["llmspool_endpoint_received_bytes_total{\(label)}"] == samples["llmspool_received_bytes_total"])
        #expect(samples["llmspool_endpoint_in_flight{\(label)}"] == 0)
        #expect(samples["llmspool_endpoint_waiting{\(label),cause=\"cooling-down\"}"] == 0)
        #expect(samples["llmspool_endpoint_tokens_total{\(label),kind=\"completion\"}"] == samples["llmspool_tokens_total{kind=\"completion\"}"])
        #expect(samples["llmspool_endpoint_cooldowns_total{\(label)}"] == 0)
        try expectPrometheusNaming(String(decoding: try LoopbackGet.body(port: port, path: "/metrics"), as: UTF8.self))
        #expect(String(decoding: try LoopbackGet.body(port: port, path: "/healthz"), as: UTF8.self) == "ok\n")
    }

    /// The exposition's own conventions: every family has HELP and TYPE, names are
    /// snake_case under llmspool_, counters and only counters end in _total, units are
    /// base units (seconds, bytes) named before _total, and every sample belongs to a family.
    func expectPrometheusNaming(_ text: String) throws {
        var types: [String: String] = [:]
        var helped: Set<String> = []
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
            if parts.first == "#", parts.count >= 4, parts[1] == "TYPE" { types[parts[2]] = parts[3] }
            if parts.first == "#", parts.count >= 3, parts[1] == "HELP" { helped.insert(parts[2]) }
        }
        #expect(!types.isEmpty)
        for (name, type) in types {
            #expect(name.range(of: #"^llmspool_[a-z][a-z0-9_]*$"#, options: .regularExpression) != nil, "\(name)")
            #expect(helped.contains(name), "\(name) has no HELP")
            #expect((type == "counter") == name.hasSuffix("_total"), "\(name) is a \(type)")
            #expect(!name.contains("_ms") && !name.contains("_milliseconds") && !name.contains("_kb"), "\(name): base units only")
            if name.hasSuffix("_total") { #expect(!name.hasSuffix("_seconds_total_total")) }
        }
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            let family = ["_bucket", "_sum", "_count"].reduce(name) { name, suffix in
                types[name] == nil && name.hasSuffix(suffix) && types[String(name.dropLast(suffix.count))] == "histogram" ? String(name.dropLast(suffix.count)) : name
            }
            #expect(types[family] != nil, "a sample of no family: \(line)")
        }
    }

    @Test func logLinesFitTheirReader() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(arguments: ["--log-format", "json"], environment: ["JOURNAL_STREAM": "8:1234"])
        try harness.drop("logged", Harness.request("log me"))
        try waitUntil("answered", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.result("logged")) }
        #expect(harness.stopDaemon() == 0)
        let lines = harness.log.split(separator: "\n").map(String.init)
        let objects = try lines.map { line -> [String: Any] in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { throw HarnessError("not JSON: \(line)") }
            return object
        }
        let done = try #require(objects.first { $0["msg"] as? String == "done" && $0["id"] as? String == "logged" }, "a line about a request carries its id")
        #expect(done["attempts"] as? Int == 1 && done["bytes"] is NSNumber && done["seconds"] is NSNumber, "numbers are numbers: \(done)")
        #expect(done["result"] is String && done["endpoint"] is String)
        #expect(objects.allSatisfy { $0["time"] == nil }, "journald stamps lines itself")
        // Outside journald, text lines start with a timestamp.
        try harness.startDaemon(arguments: ["--log-format", "text"])
        let last = try #require(harness.log.split(separator: "\n").last)
        #expect(last.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (debug|info|warning|error): "#, options: .regularExpression) != nil, "\(last)")
    }

    @Test(.enabled(if: Harness.which("systemd-analyze") != nil, "systemd-analyze is not installed"))
    func theUnitFilePassesSystemdAnalyzeVerify() throws {
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../packaging/llmspool.service").standardized.path
        let copy = NSTemporaryDirectory() + "llmspool-\(getpid()).service"
        try String(contentsOfFile: unit, encoding: .utf8).replacingOccurrences(of: "/usr/bin/llmspool", with: Harness.binary)
            .write(toFile: copy, atomically: false, encoding: .utf8)
        defer { unlink(copy) }
        // The unit names its man page; verify looks it up, so MANPATH points at the repository's.
        let manRoot = NSTemporaryDirectory() + "llmspool-man-\(getpid())"
        try FileManager.default.createDirectory(atPath: manRoot + "/man1", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: manRoot) }
        try FileManager.default.copyItem(atPath: unit.replacingOccurrences(of: "packaging/llmspool.service", with: "doc/llmspool.1"),
                                         toPath: manRoot + "/man1/llmspool.1")
        setenv("MANPATH", manRoot, 1)
        defer { unsetenv("MANPATH") }
        try Harness.run(Harness.which("systemd-analyze")!, ["verify", copy])
    }
}
