import Foundation
import LLMSpoolCore
import LLMSpoolStub
import Testing

/// The daemon against an https endpoint speaking HTTP/2, as real providers are: nghttpx
/// with a private CA in front of the stub. Streams share one connection; `http_version`
/// 1.1 takes one connection per stream; without the CA the certificate problem is named
/// and not retried.
@Suite(.serialized) struct HTTP2EndpointTests {
    /// The CA variables emptied, so that the machine's settings decide nothing here.
    static let noCAVariables = ["CURL_CA_BUNDLE": "", "SSL_CERT_FILE": "", "SSL_CERT_DIR": ""]

    /// The TLS front over the harness's stub, or nil (the test skipped) when nghttpx or
    /// openssl is missing outside CI; under CI=true, as for the SDKs, missing is a failure.
    static func front(_ harness: Harness) throws -> TLSFront? {
        if let missing = TLSFront.missing {
            if SDKJudge.mustRun { Issue.record("\(missing); .ci/deps --test installs it") } else { print("skipped: \(missing)") }
            return nil
        }
        try harness.startStub()
        guard let port = UInt16(harness.stubURL.split(separator: ":").last?.split(separator: "/").first ?? "") else {
            throw HarnessError("no port in \(harness.stubURL)")
        }
        try Syscall.mkdir(harness.root + "/tls", mode: 0o700)
        return try TLSFront(backendPort: port, directory: harness.root + "/tls", maxStreams: 100)
    }

    /// Drops `count` streamed requests and waits until the stub holds every one of them
    /// at once, before any has ended: they were in flight together.
    static func dropHeldTogether(_ harness: Harness, prefix: String, count: Int) throws -> [String] {
        let ids = (0..<count).map { "\(prefix)-\($0)" }
        // 8 tokens 600 ms apart: about 5 s a stream, long enough for the last to arrive.
        for id in ids { try harness.drop(id, Harness.request(id, stream: true, stub: ["tokens": 8, "token_delay_ms": 600])) }
        try waitUntil("the stub holds all \(count)", timeout: 60) {
            Set(try harness.stubArrivals().map(\.prompt)).isSuperset(of: ids)
        }
        let ended = ids.filter { FileManager.default.fileExists(atPath: harness.layout.result($0)) }
        #expect(ended.isEmpty, "ended before the last arrived, so not all in flight at once: \(ended)")
        try waitUntil("every result", timeout: 120) { ids.allSatisfy { FileManager.default.fileExists(atPath: harness.layout.result($0)) } }
        return ids
    }

    /// h2c (`http_version` 2 over http://) against nghttpx's cleartext HTTP/2 front: libcurl
    /// 7.88 fails every request after the first on a connection, so each takes its own.
    @Test func h2cAnswersEveryRequestOnAConnectionOfItsOwn() throws {
        let harness = try Harness()
        defer { harness.stop() }
        if let missing = TLSFront.missing {
            if SDKJudge.mustRun { Issue.record("\(missing); .ci/deps --test installs it") } else { print("skipped: \(missing)") }
            return
        }
        try harness.startStub()
        let port = try #require(UInt16(harness.stubURL.split(separator: ":").last?.split(separator: "/").first ?? ""))
        try Syscall.mkdir(harness.root + "/h2c", mode: 0o700)
        let front = try TLSFront(backendPort: port, directory: harness.root + "/h2c", cleartext: true)
        defer { front.stop() }
        try harness.startDaemon(config: ["endpoints": [["name": "h2c", "base_url": front.url, "http_version": "2"]], "concurrency": 4, "max_attempts": 1])
        let ids = (0..<12).map { "h2c-\($0)" }
        for id in ids { try harness.drop(id, Harness.request(id, stream: id.hasSuffix("0") || id.hasSuffix("2") || id.hasSuffix("4"))) }
        try waitUntil("every request ends", timeout: 60) {
            ids.allSatisfy { Syscall.isPresent(harness.layout.result($0)) || Syscall.isPresent(harness.layout.errorRecord($0)) }
        }
        let failed = ids.filter { Syscall.isPresent(harness.layout.errorRecord($0)) }
        #expect(failed.isEmpty, "failed: \(failed)")
    }

    @Test func manyStreamsShareOneHTTP2ConnectionWithItsCAFile() throws {
        let harness = try Harness()
        defer { harness.stop() }
        guard let front = try Self.front(harness) else { return }
        defer { front.stop() }
        try harness.startDaemon(config: ["endpoints": [["name": "tls", "base_url": front.url, "ca_file": front.caFile]],
                                         "concurrency": 64, "max_attempts": 1],
                                environment: Self.noCAVariables)
        let ids = try Self.dropHeldTogether(harness, prefix: "h2", count: 40)
        let entries = front.entries().filter { $0.request.hasPrefix("POST /v1/chat/completions") }
        #expect(entries.count == ids.count)
        #expect(entries.allSatisfy { $0.alpn == "h2" && $0.request.hasSuffix("HTTP/2") && $0.status == 200 }, "\(entries)")
        // 40 streams at once under nghttpx's 100 per connection: one connection (the others
        // wait for its handshake, PIPEWAIT and ConnectionPacing).
        #expect(TLSFront.connections(entries) == 1, "\(TLSFront.connections(entries)) connections for \(ids.count) streams")
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
    }

    /// Past the first connection's 100 streams, libcurl 7.88 opened a connection for every
    /// stream added while the second was being set up (391 for 5,000 in P6); paced, the
    /// streams fill one connection after another.
    @Test func streamsPastOneConnectionFillTheFewestConnections() throws {
        let harness = try Harness()
        defer { harness.stop() }
        guard let front = try Self.front(harness) else { return }
        defer { front.stop() }
        try harness.startDaemon(config: ["endpoints": [["name": "tls", "base_url": front.url, "ca_file": front.caFile]],
                                         "concurrency": 300, "max_attempts": 1],
                                environment: Self.noCAVariables)
        let ids = try Self.dropHeldTogether(harness, prefix: "many", count: 250)
        let entries = front.entries().filter { $0.request.hasPrefix("POST /v1/chat/completions") }
        #expect(entries.count == ids.count)
        #expect(entries.allSatisfy { $0.alpn == "h2" && $0.status == 200 })
        #expect(TLSFront.connections(entries) == 3, "\(TLSFront.connections(entries)) connections for \(ids.count) streams at 100 each")
    }

    @Test func http11TakesAConnectionPerStream() throws {
        let harness = try Harness()
        defer { harness.stop() }
        guard let front = try Self.front(harness) else { return }
        defer { front.stop() }
        try harness.startDaemon(config: ["base_url": front.url, "ca_file": front.caFile, "http_version": "1.1", "max_attempts": 1],
                                environment: Self.noCAVariables)
        let ids = try Self.dropHeldTogether(harness, prefix: "h1", count: 8)
        let entries = front.entries().filter { $0.request.hasPrefix("POST /v1/chat/completions") }
        #expect(entries.count == ids.count)
        #expect(entries.allSatisfy { $0.alpn == "http/1.1" && $0.request.hasSuffix("HTTP/1.1") && $0.status == 200 }, "\(entries)")
        #expect(TLSFront.connections(entries) == ids.count)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
    }

    @Test func withoutTheCATheCertificateProblemIsNamedAndNotRetried() throws {
        let harness = try Harness()
        defer { harness.stop() }
        guard let front = try Self.front(harness) else { return }
        defer { front.stop() }
        try harness.startDaemon(config: ["base_url": front.url, "max_attempts": 5], environment: Self.noCAVariables)
        try harness.drop("unknown-ca", Harness.request("unknown-ca", stream: true))
        try waitUntil("it failed", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.errorRecord("unknown-ca")) }
        let record = try harness.json(harness.layout.errorRecord("unknown-ca"))
        let message = record["message"] as? String ?? ""
        #expect(record["kind"] as? String == "transport")
        #expect(record["attempts"] as? Int == 1, "retried a certificate that cannot change: \(record)")
        #expect(message.contains("SSL certificate problem"), "\(message)")
        #expect(message.contains("set ca_file in the config"), "\(message)")
        #expect(FileManager.default.fileExists(atPath: harness.layout.failed + "/unknown-ca.json"))
        #expect(front.entries().isEmpty, "a request got past an unverified certificate")
    }
}
