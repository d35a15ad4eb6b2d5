import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Against LiteLLM's proxy on loopback (models with `mock_response`, no network): the plain
/// Responses, completions and embeddings requests are answered through the real daemon and
/// their results parse as the SDK's types. LiteLLM's mock cannot stream Responses, so the
/// streamed forms are checked against the stub (`OpenAIDialectTests`). Skipped when the
/// proxy is not installed in the SDK venv (`pip install 'litellm[proxy]==1.80.0'`; it is
/// not in `.ci/sdk-venv`: it takes about four minutes to install).
@Suite(.serialized) struct LiteLLMProxyTests {
    static var proxy: String { SDKJudge.venv + "/bin/litellm" }
    static var installed: Bool { FileManager.default.isExecutableFile(atPath: proxy) }

    static let masterKey = Harness.secret

    static let config = """
    model_list:
      - model_name: mock-gpt
        litellm_params:
          model: openai/gpt-4o-mini
          api_key: sk-unused
          mock_response: "Hello from the mock"
      - model_name: mock-embed
        litellm_params:
          model: openai/text-embedding-3-small
          api_key: sk-unused
          mock_response: [0.1, 0.2, 0.3]
    general_settings:
      master_key: \(masterKey)
    """

    /// A loopback port nobody listens on right now.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test(.enabled(if: LiteLLMProxyTests.installed, "LiteLLM's proxy is not installed in the SDK venv: pip install 'litellm[proxy]==1.80.0' (skipped)"))
    func plainAnswersOfEachDialectParse() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let port = try Self.freePort()
        let configPath = harness.root + "/litellm.yaml"
        try Self.config.write(toFile: configPath, atomically: false, encoding: .utf8)
        let log = harness.root + "/litellm.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.proxy)
        process.arguments = ["--config", configPath, "--host", "127.0.0.1", "--port", "\(port)"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardError = process.standardOutput
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAI_API_KEY"] = nil
        environment["OPENAI_BASE_URL"] = nil
        process.environment = environment
        try process.run()
        defer {
            // The daemon first: uvicorn waits for open keep-alive connections before it exits.
            harness.stop()
            process.terminate()
            var waited = 0
            while process.isRunning && waited < 100 {
                usleep(100_000)
                waited += 1
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            while process.isRunning { usleep(50_000) }
        }
        // Its start imports a great deal: half a minute on a busy machine.
        try waitUntil("LiteLLM's proxy answers", timeout: 180) {
            guard process.isRunning else { throw HarnessError("the proxy exited: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")") }
            return (try? LoopbackGet.body(port: port, path: "/health/liveliness")) != nil
        }
        try harness.startDaemon(config: ["endpoints": [["name": "litellm", "base_url": "http://127.0.0.1:\(port)/v1"]]])
        let requests: [(String, [String: Any], String)] = [
            ("responses", ["url": "/v1/responses", "body": ["model": "mock-gpt", "input": "Say hello"]], "Response"),
            ("completions", ["url": "/v1/completions", "body": ["model": "mock-gpt", "prompt": "Say hello"]], "Completion"),
            ("embeddings", ["url": "/v1/embeddings", "body": ["model": "mock-embed", "input": ["first passage"]]], "CreateEmbeddingResponse"),
        ]
        for (id, envelope, _) in requests { try harness.drop(id, envelope) }
        try waitUntil("every request has an outcome", timeout: 60) {
            requests.allSatisfy { FileManager.default.fileExists(atPath: harness.layout.result($0.0))
                || FileManager.default.fileExists(atPath: harness.layout.errorRecord($0.0)) }
        }
        for (id, _, type) in requests {
            let path = harness.layout.result(id)
            #expect(FileManager.default.fileExists(atPath: path), "\(id) failed: \((try? harness.json(harness.layout.errorRecord(id))) ?? [:])")
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            if id == "responses" {
                #expect(ResponsesDialect().answerText(ofResult: bytes) == "Hello from the mock")
                // LiteLLM 1.80's Responses usage lacks input_tokens_details.cache_write_tokens,
                // which the SDK's type requires: the result is LiteLLM's answer as it sent it.
                withKnownIssue("LiteLLM 1.80's Responses answer has no usage.input_tokens_details.cache_write_tokens") {
                    try SDKJudge.expectParses(type, [path])
                }
            } else {
                try SDKJudge.expectParses(type, [path])
            }
        }
        #expect(CompletionsDialect().answerText(ofResult: Array(try Data(contentsOf: URL(fileURLWithPath: harness.layout.result("completions"))))) == "Hello from the mock")
        #expect(EmbeddingsDialect.summary(ofResult: Array(try Data(contentsOf: URL(fileURLWithPath: harness.layout.result("embeddings"))))) == "1 embedding of 3 dimensions")
    }
}
