import Foundation
import Testing
import LLMSpoolModel
@testable import LLMSpoolCore

@Suite struct AnthropicConfigTests {
    func parse(_ text: String) throws -> Config {
        try Config.parse(Array(text.utf8), source: "test.json")
    }

    @Test(arguments: [
        ("https://api.anthropic.com", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/v1", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/v1/", "https://api.anthropic.com/v1/messages"),
        ("http://127.0.0.1:8080/proxy/v1//", "http://127.0.0.1:8080/proxy/v1/messages"),
        ("http://127.0.0.1:8080/v10", "http://127.0.0.1:8080/v10/v1/messages"),
    ])
    func anthropicBaseURLIsJoinedWithoutDoublingV1(base: String, url: String) {
        let endpoint = Endpoint(baseURL: base, apiKey: nil, api: .anthropic)
        #expect(endpoint.url(for: MessagesDialect()) == url)
        #expect(endpoint.requestURL == url)
    }

    @Test func openAIBaseURLKeepsItsV1() {
        let endpoint = Endpoint(baseURL: "http://127.0.0.1:9/v1/", apiKey: nil)
        #expect(endpoint.chatCompletionsURL == "http://127.0.0.1:9/v1/chat/completions")
        #expect(endpoint.api == .openai)
    }

    @Test func endpointsNameTheirAPIAndVersion() throws {
        let config = try parse(#"""
        {"endpoints": [
          {"name": "anthropic", "api": "anthropic", "base_url": "https://api.anthropic.com/v1", "anthropic_version": "2024-10-22"},
          {"name": "plain", "base_url": "http://127.0.0.1:1/v1"},
          {"name": "anthropic2", "api": "anthropic", "base_url": "http://127.0.0.1:2", "api_key_env": "OTHER"}
        ]}
        """#)
        let endpoints = try config.resolvedEndpoints(environment: ["ANTHROPIC_API_KEY": "sk-ant-1", "OTHER": "sk-ant-2", "OPENAI_API_KEY": "sk-o"])
        #expect(endpoints.map(\.api) == [.anthropic, .openai, .anthropic])
        #expect(endpoints[0].anthropicVersion == "2024-10-22")
        #expect(endpoints[0].apiKey?.value == "sk-ant-1", "an Anthropic endpoint's key is ANTHROPIC_API_KEY by default")
        #expect(endpoints[0].requestURL == "https://api.anthropic.com/v1/messages")
        #expect(endpoints[1].apiKey?.value == "sk-o")
        #expect(endpoints[2].anthropicVersion == "2023-06-01")
        #expect(endpoints[2].apiKey?.value == "sk-ant-2")
        #expect(endpoints[2].apiKeyOrigin == "$OTHER")
        #expect(!"\(endpoints)".contains("sk-ant"))
        #expect(!String(reflecting: endpoints).contains("sk-ant"))
    }

    @Test(arguments: [
        (#"{"endpoints": [{"base_url": "http://x", "api": "sparrow"}]}"#, #"endpoints[0]: "api" must be openai or anthropic, not "sparrow""#),
        (#"{"endpoints": [{"base_url": "http://x", "api": 1}]}"#, #""api" must be a string"#),
        (#"{"endpoints": [{"base_url": "http://x", "anthropic_version": "2023-06-01"}]}"#, #""anthropic_version" is only for an endpoint whose "api" is "anthropic""#),
        (#"{"endpoints": [{"base_url": "http://x", "api": "anthropic", "anthropic_version": "2023\r\nx-evil: 1"}]}"#, "printable ASCII"),
        (#"{"endpoints": [{"base_url": "http://x", "api": "anthropic", "anthropic_version": ""}]}"#, "printable ASCII"),
        (#"{"endpoints": [{"base_url": "http://x", "api": "anthropic", "anthropic-version": "1"}]}"#, #"unknown setting "anthropic-version""#),
        (#"{"api": "anthropic"}"#, #"unknown setting "api""#),
    ])
    func configErrorsNameTheEndpointAndTheSetting(text: String, mention: String) {
        let error = #expect(throws: ConfigError.self) { try parse(text) }
        #expect(error?.message.contains(mention) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("test.json") == true)
    }

    @Test func environmentAloneDefinesTheEndpointsAsTheSDKsRead() throws {
        let config = Config()
        // Nothing Anthropic: the OpenAI endpoint alone, as before.
        let plain = try config.resolvedEndpoints(environment: ["OPENAI_API_KEY": "sk-o"])
        #expect(plain.map(\.api) == [.openai])
        // Both keys: both endpoints, the Anthropic one at the SDK's default base.
        let both = try config.resolvedEndpoints(environment: ["OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"])
        #expect(both.map(\.api) == [.openai, .anthropic])
        #expect(both[1].requestURL == "https://api.anthropic.com/v1/messages")
        #expect(both[1].apiKey?.value == "sk-a")
        #expect(both[1].name == "anthropic")
        // Only Anthropic's variables: no keyless endpoint at api.openai.com.
        let only = try config.resolvedEndpoints(environment: ["ANTHROPIC_API_KEY": "sk-a"])
        #expect(only.map(\.api) == [.anthropic])
        // ANTHROPIC_BASE_URL alone (a local proxy needs no key), with or without /v1.
        let local = try config.resolvedEndpoints(environment: ["ANTHROPIC_BASE_URL": "http://127.0.0.1:4000/v1"])
        #expect(local.map(\.requestURL) == ["http://127.0.0.1:4000/v1/messages"])
        #expect(local[0].apiKey == nil)
        // An OpenAI base named by the environment or the file keeps the OpenAI endpoint.
        let named = try config.applyingEnvironment(["OPENAI_BASE_URL": "http://127.0.0.1:9/v1"])
            .resolvedEndpoints(environment: ["ANTHROPIC_API_KEY": "sk-a"])
        #expect(named.map(\.api) == [.openai, .anthropic])
        var fromFile = Config()
        fromFile.baseURL = "http://127.0.0.1:8/v1"
        #expect(try fromFile.resolvedEndpoints(environment: ["ANTHROPIC_API_KEY": "sk-a"]).map(\.api) == [.openai, .anthropic])
        // An endpoints list is the whole truth: the environment adds nothing to it.
        var listed = Config()
        listed.endpoints = [EndpointSettings(name: "one", baseURL: "http://127.0.0.1:1/v1")]
        #expect(try listed.resolvedEndpoints(environment: ["ANTHROPIC_API_KEY": "sk-a"]).map(\.name) == ["one"])
    }

    @Test func warningsCatchAnAPIThatDoesNotMatchItsHost() {
        let wrong = ConfigWarnings.of([Endpoint(name: "c", baseURL: "https://api.anthropic.com", apiKey: Secret("k"))])
        #expect(wrong.contains { $0.contains("\"api\": \"anthropic\"") })
        let right = ConfigWarnings.of([Endpoint(name: "c", baseURL: "https://api.anthropic.com", apiKey: Secret("k"), api: .anthropic)])
        #expect(right.isEmpty)
        let keyless = ConfigWarnings.of([Endpoint(name: "c", baseURL: "https://api.anthropic.com", apiKey: nil, api: .anthropic, apiKeyOrigin: "$ANTHROPIC_API_KEY")])
        #expect(keyless.contains { $0.contains("$ANTHROPIC_API_KEY") })
    }
}
