import Foundation
import Glibc
import LLMSpoolCore

/// An https endpoint speaking HTTP/2 in front of a plain-http one on loopback, as real
/// providers are: a private CA and a server certificate made with `openssl` in a folder,
/// and `nghttpx` (Debian's nghttp2-proxy) terminating TLS. Its access log says which
/// protocol each request came by and from which client port, so a caller can count the
/// connections it was sent over. For the tests and the benchmark; nothing else uses it.
public final class TLSFront {
    /// One request as nghttpx logged it.
    public struct Entry: Sendable, Equatable {
        /// The ALPN protocol of its connection: `h2` or `http/1.1`.
        public var alpn: String
        /// The client's port: one value per TCP connection.
        public var clientPort: Int
        public var status: Int
        /// The request line, such as `POST /v1/chat/completions HTTP/2`.
        public var request: String
    }

    public let directory: String
    /// The PEM file of the CA that signed the server's certificate.
    public let caFile: String
    public private(set) var port: UInt16 = 0
    public let accessLog: String
    private var process: Process?

    /// The proxy and `openssl`, or why they cannot be had (a sentence to print).
    public static var missing: String? {
        if which("nghttpx") == nil { return "nghttpx is not installed (Debian package nghttp2-proxy)" }
        if which("openssl") == nil { return "openssl is not installed (Debian package openssl)" }
        return nil
    }

    public static func which(_ program: String) -> String? {
        // nghttpx is in /usr/sbin, which a user's PATH often lacks.
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for folder in ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"] + path.split(separator: ":").map(String.init) {
            let path = "\(folder)/\(program)"
            if access(path, X_OK) == 0 { return path }
        }
        return nil
    }

    /// Makes the CA and certificate in `directory` and starts nghttpx in front of
    /// 127.0.0.1:`backendPort`. `maxStreams` is the HTTP/2 streams it allows on one connection.
    /// `cleartext`: HTTP/2 without TLS (h2c with prior knowledge) on the front instead.
    public init(backendPort: UInt16, directory: String, maxStreams: Int = 100, workers: Int = 1, cleartext: Bool = false) throws {
        self.cleartext = cleartext
        guard let openssl = TLSFront.which("openssl"), let nghttpx = TLSFront.which("nghttpx") else {
            throw ConfigError(TLSFront.missing ?? "nghttpx or openssl is missing")
        }
        self.directory = directory
        caFile = directory + "/ca.pem"
        accessLog = directory + "/access.log"
        let (caKey, key, request, certificate, extensions) = (directory + "/ca.key", directory + "/server.key", directory + "/server.csr",
                                                              directory + "/server.pem", directory + "/server.ext")
        try TLSFront.run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey, "-out", caFile, "-days", "2",
                                   "-subj", "/CN=llmspool private test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                                   "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try TLSFront.run(openssl, ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", request, "-subj", "/CN=127.0.0.1"])
        let extensionsFile = try FileDescriptor.open(extensions, O_WRONLY | O_CREAT | O_TRUNC)
        try extensionsFile.writeAll(Array("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n".utf8))
        try TLSFront.run(openssl, ["x509", "-req", "-in", request, "-CA", caFile, "-CAkey", caKey, "-CAcreateserial", "-out", certificate,
                                   "-days", "2", "-extfile", extensions])
        // A free port is found by binding port 0; another program may take it before
        // nghttpx binds it, so a proxy that exits at start is tried again on another.
        var lastOutput = ""
        for _ in 0..<5 {
            let candidate = try TLSFront.freePort()
            let output = directory + "/nghttpx.out"
            let proxy = Process()
            proxy.executableURL = URL(fileURLWithPath: nghttpx)
            // --single-process: one process to stop, no worker left behind.
            proxy.arguments = ["--conf=/dev/null", "--single-process", "--frontend=127.0.0.1,\(candidate)\(cleartext ? ";no-tls" : "")", "--backend=127.0.0.1,\(backendPort)",
                               "--workers=\(workers)", "--no-ocsp", "--no-via", "--rlimit-nofile=0",
                               "--frontend-http2-max-concurrent-streams=\(maxStreams)",
                               "--backend-read-timeout=1h", "--frontend-read-timeout=1h", "--frontend-write-timeout=1h", "--backend-write-timeout=1h",
                               "--backend-keep-alive-timeout=1h",
                               "--accesslog-file=\(accessLog)", "--accesslog-format=$alpn $remote_port $status $request",
                               "--errorlog-file=\(output)", key, certificate]
            proxy.standardOutput = FileHandle.nullDevice
            proxy.standardError = FileHandle.nullDevice
            try proxy.run()
            let deadline = Date().addingTimeInterval(20)
            while proxy.isRunning, Date() < deadline, !TLSFront.connects(port: candidate) { usleep(20_000) }
            if proxy.isRunning, TLSFront.connects(port: candidate) {
                process = proxy
                port = candidate
                return
            }
            if proxy.isRunning { kill(proxy.processIdentifier, SIGKILL) }
            proxy.waitUntilExit()
            // Only for the error below: a proxy that wrote nothing is said as such.
            lastOutput = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        }
        throw ConfigError("nghttpx did not start: \(lastOutput)")
    }

    deinit { stop() }

    /// The base URL of its OpenAI-style API.
    public var url: String { "\(cleartext ? "http" : "https")://127.0.0.1:\(port)/v1" }
    /// The front speaks h2c (no TLS).
    public let cleartext: Bool

    public func stop() {
        guard let process else { return }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        self.process = nil
    }

    /// Every request logged so far (nghttpx writes a line as each one ends).
    public func entries() -> [Entry] {
        // No log yet: nghttpx has ended no request.
        guard let text = try? String(contentsOfFile: accessLog, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 3)
            guard fields.count == 4, let port = Int(fields[1]), let status = Int(fields[2]) else { return nil }
            return Entry(alpn: String(fields[0]), clientPort: port, status: status, request: String(fields[3]))
        }
    }

    /// How many TCP connections the logged requests came over.
    public static func connections(_ entries: [Entry]) -> Int { Set(entries.map(\.clientPort)).count }

    static func run(_ program: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ConfigError("\(program) \(arguments.joined(separator: " ")) failed: \(String(decoding: said, as: UTF8.self))")
        }
    }

    static func freePort() throws -> UInt16 {
        let opened = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard opened >= 0 else { throw ConfigError("socket: errno \(errno)") }
        let socketFile = FileDescriptor(owning: opened)
        let fd = socketFile.rawValue
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ConfigError("bind 127.0.0.1:0: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    static func connects(port: UInt16) -> Bool {
        let opened = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard opened >= 0 else { return false }
        let socketFile = FileDescriptor(owning: opened)
        let fd = socketFile.rawValue
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
