import Foundation
import Testing
import LLMSpoolModel
@testable import LLMSpoolCore

@Suite struct HTTPVersionConfigTests {
    func parse(_ text: String) throws -> Config {
        try Config.parse(Array(text.utf8), source: "test.json")
    }

    func error(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func theTopLevelVersionIsEveryEndpointsUnlessItSetsItsOwn() throws {
        let ca = NSTemporaryDirectory() + "llmspool-ca-\(UUID().uuidString).pem"
        _ = FileManager.default.createFile(atPath: ca, contents: Data("-----BEGIN CERTIFICATE-----\nnot checked further\n-----END CERTIFICATE-----\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: ca) }
        let config = try parse(#"""
        {"http_version": "1.1", "endpoints": [
          {"name": "a", "base_url": "https://a.example/v1"},
          {"name": "b", "base_url": "https://b.example/v1", "http_version": "2", "ca_file": "\#(ca)"},
          {"name": "c", "base_url": "http://127.0.0.1:1/v1", "http_version": "auto"}
        ]}
        """#)
        #expect(config.httpVersion == .http1_1)
        let endpoints = try config.resolvedEndpoints(environment: [:])
        #expect(endpoints.map(\.httpVersion) == [.http1_1, .http2, .auto])
        #expect(endpoints.map(\.caFile) == [nil, ca, nil])
        #expect(endpoints.map(\.isHTTPS) == [true, true, false])
        #expect(Config().httpVersion == .auto)
    }

    @Test func anEndpointWithoutItsOwnCAFileTakesTheTopLevelOrTheEnvironments() throws {
        let ca = NSTemporaryDirectory() + "llmspool-ca-\(UUID().uuidString).pem"
        _ = FileManager.default.createFile(atPath: ca, contents: Data("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: ca) }
        let fromEnvironment = try parse(#"{"base_url": "https://a.example/v1"}"#).applyingEnvironment(["SSL_CERT_FILE": ca])
        #expect(try fromEnvironment.resolvedEndpoints(environment: [:]).map(\.caFile) == [ca])
        let fromFile = try parse(#"{"base_url": "https://a.example/v1", "ca_file": "\#(ca)"}"#).applyingEnvironment(["CURL_CA_BUNDLE": "/elsewhere.pem"])
        #expect(try fromFile.resolvedEndpoints(environment: [:]).map(\.caFile) == [ca])
    }

    @Test(arguments: [
        (#"{"http_version": 2}"#, #"test.json: "http_version" must be one of the strings auto, 1.1, 2 ("auto" by default), not 2"#),
        (#"{"http_version": "2.0"}"#, #"test.json: "http_version" must be one of the strings auto, 1.1, 2 ("auto" by default), not "2.0""#),
        (#"{"http_version": true}"#, #"test.json: "http_version" must be one of the strings auto, 1.1, 2 ("auto" by default), not true"#),
        (#"{"endpoints": [{"base_url": "https://a/v1", "http_version": "h2"}]}"#,
         #"test.json: endpoints[0]: "http_version" must be one of the strings auto, 1.1, 2 ("auto" by default), not "h2""#),
        (#"{"ca_file": ""}"#, #"test.json: "ca_file" must be the path of a PEM file, not empty"#),
        (#"{"endpoints": [{"base_url": "https://a/v1", "ca_file": ""}]}"#, #"test.json: endpoints[0]: "ca_file" must be the path of a PEM file, not empty"#),
        (#"{"endpoints": [{"base_url": "https://a/v1", "ca_file": 3}]}"#, #"test.json: endpoints[0]: "ca_file" must be a string"#),
    ])
    func badValuesAreNamed(text: String, message: String) {
        #expect(error(text) == message)
    }

    @Test func anUnreadableCAFileStopsTheEndpointNamingTheSetting() throws {
        let missing = "/nonexistent/llmspool-\(UUID().uuidString).pem"
        let config = try parse(#"{"endpoints": [{"name": "private", "base_url": "https://a/v1", "ca_file": "\#(missing)"}]}"#)
        var said = ""
        do { _ = try config.resolvedEndpoints(environment: [:]) } catch { said = "\(error)" }
        #expect(said.hasPrefix("endpoint private: its ca_file \(missing) cannot be read: "), "\(said)")
        #expect(said.contains("No such file"), "\(said)")
        // Plain http never reads it.
        let plain = try parse(#"{"endpoints": [{"base_url": "http://127.0.0.1:1/v1", "ca_file": "\#(missing)"}]}"#)
        #expect(try plain.resolvedEndpoints(environment: [:]).count == 1)
    }

    /// A folder, an empty file, a private key or garbage opened fine and then failed every
    /// https request with curl code 77: each stops the endpoint at start, saying why.
    @Test func aCAFileWithoutAPEMCertificateStopsTheEndpoint() throws {
        let folder = NSTemporaryDirectory() + "llmspool-ca-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cases: [(content: String?, problem: String)] = [
            (nil, "is not a regular file"),
            ("", "holds no PEM certificate"),
            ("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n", "holds no PEM certificate"),
            ("garbage", "holds no PEM certificate"),
        ]
        for (index, item) in cases.enumerated() {
            var path = folder
            if let content = item.content {
                path = folder + "/ca\(index).pem"
                try Data(content.utf8).write(to: URL(fileURLWithPath: path))
            }
            let config = try parse(#"{"endpoints": [{"name": "private", "base_url": "https://a/v1", "ca_file": "\#(path)"}]}"#)
            var said = ""
            do { _ = try config.resolvedEndpoints(environment: [:]) } catch { said = "\(error)" }
            #expect(said == "endpoint private: its ca_file \(path) \(item.problem)" + (item.problem.hasPrefix("holds") ? " (-----BEGIN CERTIFICATE-----)" : ""), "\(said)")
        }
        let good = folder + "/good.pem"
        try Data("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: good))
        let config = try parse(#"{"endpoints": [{"name": "private", "base_url": "https://a/v1", "ca_file": "\#(good)"}]}"#)
        #expect(try config.resolvedEndpoints(environment: [:]).count == 1)
    }
}
