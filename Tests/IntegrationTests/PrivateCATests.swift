import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// An https endpoint behind a private CA (openssl s_server with a self-signed certificate):
/// refused with a record that says what was checked and how to name the CA, and accepted
/// through `ca_file` or SSL_CERT_FILE.
@Suite(.serialized) struct PrivateCATests {
    @Test func aPrivateCAIsNamedByCAFileOrTheEnvironment() throws {
        guard let openssl = Harness.which("openssl") else {
            print("skipped: openssl is not installed (Debian package openssl)")
            return
        }
        let harness = try Harness()
        defer { harness.stop() }
        let (certificate, key) = (harness.root + "/ca.pem", harness.root + "/key.pem")
        try Harness.run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "1",
                                  "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        // A random port can be taken (the ephemeral range covers it): a server that exits
        // at once is started again on another.
        var port = 0
        var server = Process()
        for _ in 0..<10 {
            port = Int.random(in: 40_000...50_000)
            server = Process()
            server.executableURL = URL(fileURLWithPath: openssl)
            server.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-www", "-quiet"]
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            try waitUntil("the TLS server listens or exits", timeout: 60) { !server.isRunning || Self.connects(port: UInt16(port)) }
            if server.isRunning { break }
        }
        defer {
            if server.isRunning { kill(server.processIdentifier, SIGKILL) }
            server.waitUntilExit()
        }
        try #require(server.isRunning, "openssl s_server listens on one of ten random ports")
        let url = "https://127.0.0.1:\(port)/v1"

        // The system's CAs: curl 60, with the hint, and not retried.
        let noCAVariables = ["CURL_CA_BUNDLE": "", "SSL_CERT_FILE": "", "SSL_CERT_DIR": ""]
        try harness.startDaemon(config: ["base_url": url, "max_attempts": 1], environment: noCAVariables)
        try harness.drop("unknown-ca", Harness.request("tls"))
        try waitUntil("it failed", timeout: 20) { FileManager.default.fileExists(atPath: harness.layout.errorRecord("unknown-ca")) }
        let refused = try harness.json(harness.layout.errorRecord("unknown-ca"))
        let message = refused["message"] as? String ?? ""
        #expect(message.contains("curl code 60"), "\(message)")
        #expect(message.contains("checked against the system's CA file"), "\(message)")
        #expect(message.contains("set ca_file in the config, or SSL_CERT_FILE"), "\(message)")
        harness.stopDaemon()

        // ca_file (which a machine-wide SSL_CERT_FILE does not hide), then SSL_CERT_FILE alone:
        // the handshake passes (what s_server answers then is no chat completion).
        for (config, environment) in [(["ca_file": certificate], ["SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"]),
                                     ([:], noCAVariables.merging(["SSL_CERT_FILE": certificate]) { $1 })] {
            try harness.startDaemon(config: ["base_url": url, "max_attempts": 1, "idle_timeout_seconds": 2, "connect_timeout_seconds": 5]
                                        .merging(config) { $1 }, environment: environment)
            let id = config.isEmpty ? "through-env" : "through-config"
            try harness.drop(id, Harness.request("tls"))
            try waitUntil("\(id) ended", timeout: 20) {
                FileManager.default.fileExists(atPath: harness.layout.errorRecord(id)) || FileManager.default.fileExists(atPath: harness.layout.result(id))
            }
            if let record = try? harness.json(harness.layout.errorRecord(id)) {
                let text = record["message"] as? String ?? ""
                #expect(!text.contains("curl code 60") && !text.contains("SSL certificate problem"), "\(id): \(text)")
            }
            harness.stopDaemon()
        }
    }

    static func connects(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
