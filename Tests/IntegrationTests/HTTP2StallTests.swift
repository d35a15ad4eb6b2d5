import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Two ways libcurl 7.88 leaves an HTTP/2 stream waiting with nothing to wait for, against a
/// real TLS endpoint speaking HTTP/2 (`Tests/hostile/h2_stall.py`, Python's h2): a stream
/// whose end came with its last data, and streams whose connection closed with a TLS
/// close_notify. Before, each waited for `idle_timeout_seconds` (30 s here) and was sent again.
@Suite(.serialized) struct HTTP2StallTests {
    /// The endpoint in `mode`, with a certificate for 127.0.0.1 made here; nil (and a
    /// message) without openssl or the SDK venv.
    static func endpoint(_ harness: Harness, mode: String) throws -> (url: String, ca: String, server: Process)? {
        if let missing = SDKJudge.missing {
            if SDKJudge.mustRun { Issue.record("\(missing)") } else { print(missing) }
            return nil
        }
        guard let openssl = Harness.which("openssl") else {
            print("skipped: openssl is not installed (Debian package openssl)")
            return nil
        }
        let (certificate, key) = (harness.root + "/h2.pem", harness.root + "/h2.key")
        try Harness.run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "1",
                                  "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("hostile/h2_stall.py").path
        let output = Pipe()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: SDKJudge.python)
        server.arguments = [script, "--cert", certificate, "--key", key, "--mode", mode]
        server.standardOutput = output
        server.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try server.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let piece = output.fileHandleForReading.availableData
            if piece.isEmpty { break }
            line.append(piece)
        }
        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard words.first == "listening", let port = Int(words.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            Issue.record("the HTTP/2 endpoint did not start: \(String(decoding: line, as: UTF8.self))")
            return nil
        }
        return ("https://127.0.0.1:\(port)/v1", certificate, server)
    }

    static func stop(_ server: Process) {
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
    }

    static func request(_ content: String) -> [String: Any] {
        ["model": "m", "stream": true, "messages": [["role": "user", "content": content]]]
    }

    @Test func aStreamWhoseEndCameWithItsLastDataIsPublishedAtOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        guard let (url, ca, server) = try Self.endpoint(harness, mode: "end") else { return }
        defer { Self.stop(server) }
        // One stream at a time, each alone on the connection: where the stall showed most.
        try harness.startDaemon(config: ["base_url": url, "ca_file": ca, "idle_timeout_seconds": 30, "max_attempts": 1, "concurrency": 1])
        let sizes = [1_000, 10_000, 13_000, 16_000, 25_000]
        for size in sizes { try harness.drop("end\(size)", Self.request("size:\(size)")) }
        try waitUntil("every answer is published well before the idle timer", timeout: 20) {
            sizes.allSatisfy { Syscall.isPresent(harness.layout.result("end\($0)")) }
        }
        for size in sizes {
            #expect(Harness.content(of: try harness.json(harness.layout.result("end\(size)")))?.count == size, "end\(size): the whole text")
        }
        try SDKJudge.expectParses("ChatCompletion", sizes.map { harness.layout.result("end\($0)") })
    }

    @Test func streamsWhoseConnectionClosedAreRetriedAtOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        guard let (url, ca, server) = try Self.endpoint(harness, mode: "close") else { return }
        defer { Self.stop(server) }
        let ids = (1...5).map { "closed\($0)" }
        for id in ids { try harness.drop(id, Self.request("size:200")) }
        try harness.startDaemon(config: ["base_url": url, "ca_file": ca, "idle_timeout_seconds": 30, "max_attempts": 3,
                                         "retry_initial_seconds": 0.2, "cooldown_after_failures": 1000])
        try waitUntil("every request is answered on a new connection, well before the idle timer", timeout: 20) {
            ids.allSatisfy { Syscall.isPresent(harness.layout.result($0)) }
        }
        #expect(!harness.log.contains("idle timer fired"), "no stream waited for the idle timer")
    }
}

/// An https endpoint that accepts connections and never answers the TLS handshake: with
/// `http_version` `auto`, attempts waited for one another's hung handshake (libcurl's
/// PIPEWAIT and the connection pacing), one connection at a time until each timed out.
@Suite(.serialized) struct HungHandshakeTests {
    /// Accepts on 127.0.0.1 and keeps every connection open, answering nothing.
    final class Tarpit: @unchecked Sendable {  // `accepted` is guarded by `lock`; the fd is closed once, in stop().
        let port: Int
        private let listener: Int32
        private let lock = NSLock()
        private var accepted: [Int32] = []

        init() throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0, listen(listener, 128) == 0 else { throw SystemError(errno: errno, call: "bind", path: nil) }
            self.listener = listener
            port = try Syscall.localPort(listener)
            Thread.detachNewThread { [self] in
                while true {
                    let client = accept(listener, nil, nil)
                    if client < 0 { return }
                    lock.withLock { accepted.append(client) }
                }
            }
        }

        var connections: Int { lock.withLock { accepted.count } }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
            lock.withLock { for client in accepted { close(client) } }
        }
    }

    @Test func attemptsAgainstAHungHandshakeRunSideBySide() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let tarpit = try Tarpit()
        defer { tarpit.stop() }
        try harness.startDaemon(config: ["base_url": "https://127.0.0.1:\(tarpit.port)/v1", "connect_timeout_seconds": 8, "max_attempts": 1])
        for index in 1...6 { try harness.drop("hung\(index)", Harness.request("hung \(index)")) }
        // Before the first handshake times out (8 s), the others have tried connections of
        // their own: waiting behind it, there was one connection until then.
        try waitUntil("the attempts open connections side by side", timeout: 7) { tarpit.connections >= 6 }
        try waitUntil("every request failed on the connect timer", timeout: 30) {
            (1...6).allSatisfy { Syscall.isPresent(harness.layout.errorRecord("hung\($0)")) }
        }
    }
}
