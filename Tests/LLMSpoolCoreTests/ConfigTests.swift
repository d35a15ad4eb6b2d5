import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct ConfigTests {
    func temporaryFile(_ text: String, mode: mode_t = 0o600) throws -> String {
        let path = NSTemporaryDirectory() + "llmspool-config-\(UUID().uuidString)"
        try DurableFile.write(Array(text.utf8), to: path, mode: mode, syncDirectory: false)
        _ = chmod(path, mode)
        return path
    }

    @Test func theShippedConfigLoadsAndEqualsTheDefaults() throws {
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Config/llmspool.json").path
        #expect(try Config.load(path: shipped) == Config())
    }

    @Test func settingsOverrideDefaults() throws {
        let path = try temporaryFile(#"{"concurrency": 3, "base_url": "http://127.0.0.1:1/v1", "log_level": "debug", "_note": "ignored"}"#)
        defer { unlink(path) }
        let config = try Config.load(path: path)
        #expect(config.concurrency == 3)
        #expect(config.baseURL == "http://127.0.0.1:1/v1")
        #expect(config.logLevel == .debug)
    }

    @Test(arguments: [
        (#"{"concurency": 3}"#, "unknown setting \"concurency\" (did you mean \"concurrency\"? known: "),
        (#"{"temperature": 1}"#, "unknown setting \"temperature\" (known: "),
        (#"{"concurrency": "3"}"#, "\"concurrency\" must be a number"),
        (#"{"concurrency": 0}"#, "must be from 1 to"),
        (#"{"base_url": 5}"#, "\"base_url\" must be a string"),
        (#"{"log_level": "loud"}"#, "log_level"),
        (#"[1]"#, "must be a JSON object"),
        ("{\n\"a\": }", "line 2"),
    ])
    func badFilesNameTheFileAndTheSetting(text: String, mention: String) throws {
        let path = try temporaryFile(text)
        defer { unlink(path) }
        let error = #expect(throws: ConfigError.self) { try Config.load(path: path) }
        #expect(error?.message.contains(mention) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true)
    }

    @Test func environmentOverridesTheFileAndKeysStaySecret() throws {
        let config = Config().applyingEnvironment(["OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"])
        let endpoint = try config.resolvedEndpoints(environment: ["OPENAI_API_KEY": "sk-secret-123"])[0]
        #expect(endpoint.chatCompletionsURL == "http://127.0.0.1:9/v1/chat/completions")
        #expect(endpoint.apiKey?.value == "sk-secret-123")
        #expect(!"\(endpoint)".contains("sk-secret-123"))
        #expect(!String(reflecting: endpoint).contains("sk-secret-123"))
        var other = config
        other.apiKeyEnv = "MY_KEY"
        #expect(try other.resolvedEndpoints(environment: ["MY_KEY": "k2", "OPENAI_API_KEY": "k1"])[0].apiKey?.value == "k2")
        #expect(try config.resolvedEndpoints(environment: [:])[0].apiKey == nil)
    }

    @Test func aKeyFileReadableByOthersIsRefused() throws {
        let open = try temporaryFile("sk-file\n", mode: 0o644)
        defer { unlink(open) }
        var config = Config()
        config.apiKeyFile = open
        let error = #expect(throws: ConfigError.self) { try config.resolvedEndpoints(environment: [:])[0] }
        #expect(error?.message.contains("chmod 600") == true)
        let closed = try temporaryFile("sk-file\n", mode: 0o600)
        defer { unlink(closed) }
        config.apiKeyFile = closed
        #expect(try config.resolvedEndpoints(environment: [:])[0].apiKey?.value == "sk-file")
    }

    @Test func aBaseURLMustBeHTTP() {
        var config = Config()
        config.baseURL = "ftp://x"
        #expect(throws: ConfigError.self) { try config.resolvedEndpoints(environment: [:])[0] }
    }
}

@Suite struct ExampleConfigTests {
    @Test func theRepositoryConfigIsWhatInitWrites() throws {
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Config/llmspool.json").path
        #expect(try String(contentsOfFile: shipped, encoding: .utf8) == ExampleConfig.text(spool: "./spool"))
        let elsewhere = try Config.parse(Array(ExampleConfig.text(spool: "/var/spool/llm \"quoted\"").utf8), source: "example")
        #expect(elsewhere.spool == "/var/spool/llm \"quoted\"")
    }
}

/// Inputs the fuzzers found, kept as regressions.
@Suite struct FuzzRegressionTests {
    @Test func aNumberPastIntsRangeIsAnErrorNotACrash() throws {
        let text = #"{"concurrency": 9999999999999999999999999999999999999999999999999999999999999999}"#
        let error = #expect(throws: ConfigError.self) { try Config.parse(Array(text.utf8), source: "huge.json") }
        #expect(error?.message.contains("\"concurrency\" must be from 1 to 1000000") == true, "\(error?.message ?? "")")
        #expect(throws: ConfigError.self) { try Config.parse(Array(#"{"connect_timeout_seconds": 1e300}"#.utf8), source: "x") }
        #expect(throws: ConfigError.self) { try Config.parse(Array(#"{"concurrency": 2.5}"#.utf8), source: "x") }
        let crash = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/regressions/config/huge-concurrency").path
        #expect(throws: ConfigError.self) { try Config.parse(Array(try Data(contentsOf: URL(fileURLWithPath: crash))), source: "fuzz") }
    }

    @Test func aHugeMaxTokensDoesNotOverflowTheEstimate() throws {
        let text = #"{"model":"m","messages":[],"max_tokens":9223372036854775807}"#
        #expect(try RequestValidator.validate(Array(text.utf8)).get().estimatedTokens == 1 + (1 << 40))
    }
}

/// A config path that names a FIFO is refused at once: reading it would block the reload
/// (and every signal after it) until someone wrote to it.
@Suite struct ConfigFileKindTests {
    @Test func aFIFOIsRefusedWithoutWaitingForAWriter() throws {
        let path = "/tmp/llmspool-config-fifo-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let error = #expect(throws: ConfigError.self) { try Config.load(path: path) }
        #expect(error?.description.contains("is not a regular file") == true, "\(String(describing: error))")
    }

    @Test func aFolderIsRefusedByName() throws {
        let path = "/tmp/llmspool-config-folder-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(path, 0o700) == 0)
        defer { rmdir(path) }
        let error = #expect(throws: ConfigError.self) { try Config.load(path: path) }
        #expect(error?.description.contains("\(path) is not a regular file") == true, "\(String(describing: error))")
    }

    /// `run` refused these at start after check-config had said OK; now both refuse them,
    /// naming the file and the setting.
    @Test(arguments: ["127.0.0.1:99999", "127.0.0.1:-1", ":9464", "127.0.0.1:", "999.1.1.1:80", "[nope]:80"])
    func aMetricsAddressRunCannotBindIsRefused(address: String) {
        let error = #expect(throws: ConfigError.self) { try Config.parse(Array("{\"metrics\": \"\(address)\"}".utf8), source: "m.json") }
        #expect(error?.description.hasPrefix("m.json: \"metrics\": ") == true, "\(String(describing: error))")
    }

    @Test(arguments: ["127.0.0.1:9464", "localhost:0", "[::1]:9464"]) func aMetricsAddressRunCanBindIsKept(address: String) throws {
        #expect(try Config.parse(Array("{\"metrics\": \"\(address)\"}".utf8), source: "m.json").metricsAddress == address)
    }

    /// Deeper than the JSON reader goes, the setting was accepted and not applied.
    @Test func aJSONDepthBeyondTheReadersIsRefused() throws {
        let error = #expect(throws: ConfigError.self) { try Config.parse(Array(#"{"max_json_depth": 129}"#.utf8), source: "d.json") }
        #expect(error?.description.contains("max_json_depth") == true, "\(String(describing: error))")
        #expect(try Config.parse(Array(#"{"max_json_depth": 128}"#.utf8), source: "d.json").maxJSONDepth == 128)
    }

    /// A NUL cut the spool's path short in the C calls, after check-config had said OK.
    @Test(arguments: ["spool", "metrics", "default_model", "on_complete", "on_failure"]) func aStringWithANULIsRefused(key: String) {
        let error = #expect(throws: ConfigError.self) { try Config.parse(Array("{\"\(key)\": \"/tmp/a\\u0000b\"}".utf8), source: "n.json") }
        #expect(error?.description == "n.json: \"\(key)\" must not contain a NUL character (\\u0000)", "\(String(describing: error))")
        let list = #expect(throws: ConfigError.self) { try Config.parse(Array(#"{"on_complete": ["/bin/echo", "a\u0000b"]}"#.utf8), source: "n.json") }
        #expect(list?.description.contains("NUL") == true)
    }
}
