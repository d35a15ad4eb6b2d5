import LLMSpoolCore
import Testing

/// The warnings for a configuration that loads but will likely not work, and the message
/// for an inline key.
@Suite struct ConfigWarningsTests {
    @Test func aRemoteHTTPSEndpointWithoutAKeyIsWarnedAbout() {
        let warnings = ConfigWarnings.of([Endpoint(name: "openai", baseURL: "https://api.openai.com/v1", apiKey: nil)])
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("endpoint openai (https://api.openai.com/v1) is remote and has no API key") == true)
        #expect(ConfigWarnings.of([Endpoint(baseURL: "https://api.openai.com/v1", apiKey: Secret("sk-x"))]).isEmpty)
        #expect(ConfigWarnings.of([Endpoint(baseURL: "http://127.0.0.1:8080/v1", apiKey: nil)]).isEmpty, "a local server needs no key")
        #expect(ConfigWarnings.of([Endpoint(baseURL: "https://localhost:8443/v1", apiKey: nil)]).isEmpty)
    }

    @Test func anOpenAIBaseURLWithoutV1IsWarnedAbout() {
        let warnings = ConfigWarnings.of([Endpoint(name: "o", baseURL: "https://api.openai.com", apiKey: Secret("sk-x"))])
        #expect(warnings == ["endpoint o: base_url https://api.openai.com has no /v1; OpenAI's is https://api.openai.com/v1 (requests go to <base_url>/chat/completions)"])
        #expect(ConfigWarnings.of([Endpoint(baseURL: "http://127.0.0.1:11434", apiKey: nil)]).isEmpty, "other servers may have no /v1")
    }

    @Test func anInlineKeyGetsItsOwnMessage() {
        #expect(throws: ConfigError.self) { try Config.parse(Array(#"{"api_key": "sk-x"}"#.utf8), source: "c.json") }
        do {
            _ = try Config.parse(Array(#"{"api_key": "sk-x"}"#.utf8), source: "c.json")
        } catch {
            #expect("\(error)" == "c.json: \"api_key\": keys are never accepted inline; use api_key_env (a variable's name) or api_key_file")
            #expect(!"\(error)".contains("sk-x"))
        }
    }
}

/// Config syntax errors read naturally and name the line and column; the standard's rules hold.
@Suite struct ConfigSyntaxTests {
    func message(_ text: String) -> String {
        do {
            _ = try Config.parse(Array(text.utf8), source: "c.json")
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    @Test func aTrailingCommaIsRefusedWithItsPlace() {
        let refused = message("{\n  \"concurrency\": 4,\n}\n")
        #expect(refused.hasPrefix("config c.json is not valid JSON: line 3, column 1: "), "\(refused)")
    }

    @Test func aMissingCommaNamesItsLineAndColumn() {
        let refused = message("{\n  \"concurrency\": 4\n  \"metrics\": \"127.0.0.1:9464\"\n}\n")
        #expect(refused.hasPrefix("config c.json is not valid JSON: line 3, column 3: "), "\(refused)")
        #expect(message("{\"concurrency\": 4}") == "accepted")
    }

    @Test func aYAMLConfigIsToldItIsNotRead() {
        let yaml = Array("spool: /var/spool/llmspool\nconcurrency: 4\n".utf8)
        for name in ["c.yaml", "c.yml", "C.YAML", "c.json"] {
            let refused: String
            do {
                _ = try Config.parse(yaml, source: name)
                refused = "accepted"
            } catch {
                refused = "\(error)"
            }
            #expect(refused.hasPrefix("config \(name) is not valid JSON: line 1, column 1: "), "\(refused)")
            #expect(refused.hasSuffix("(the configuration is JSON; YAML is not read)") == (name != "c.json"), "\(refused)")
        }
    }
}

