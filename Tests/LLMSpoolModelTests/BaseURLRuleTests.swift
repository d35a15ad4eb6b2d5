import Testing
@testable import LLMSpoolModel

/// An endpoint's base URL, refused when the config is read if no request could reach it.
@Suite struct BaseURLRuleTests {
    @Test(arguments: ["https://api.openai.com/v1", "http://127.0.0.1:8080/v1", "HTTPS://Example.com", "http://[::1]:9000/v1",
                      "http://[fe80::1]/v1", "http://localhost:1/", "https://host:65535/v1", "http://localhost:4000",
                      "https://bücher.example/v1", "https://xn--bcher-kva.example/v1"])
    func aUsableURLPasses(url: String) {
        #expect(BaseURLRule.problem(url) == nil, "\(url)")
    }

    @Test func eachUnusableURLSaysWhy() {
        let cases: [(String, String)] = [
            ("ftp://host/v1", "must start with http"),
            ("api.openai.com/v1", "must start with http"),
            ("http://host:/v1", "no port after it"),
            ("http://host:0/v1", "not a number from 1 to 65535"),
            ("http://host:65536/v1", "not a number from 1 to 65535"),
            ("http://host:80a/v1", "not a number"),
            ("http://host:000000080/v1", "not a number"),
            ("http:///v1", "names no host"),
            ("http://:8080/v1", "names no host"),
            ("http://[]:80/v1", "names no host"),
            ("http://[::1/v1", "closing ]"),
            ("http://[::1]x/v1", "not a port"),
            ("http://user:sk-secret@host/v1", "credentials"),
            ("http://user:pa/ss@host/v1", "credentials"),
            ("http://host /v1", "space, control"),
            ("http://host/v1\n", "(U+A)"),
            ("http://exa\u{200B}mple.com/v1", "invisible character (U+200B)"),
            ("http://host\u{85}/v1", "(U+85)"),
            ("https://x.openai.azure.com/openai/deployments/x?api-version=2024-02-01", "query or fragment"),
            ("http://host/v1#frag", "query or fragment"),
            ("http://host:80:90/v1", "more than one :"),
            ("http://::1:8080/v1", "more than one :"),
        ]
        for (url, expected) in cases {
            let problem = BaseURLRule.problem(url)
            #expect(problem?.contains(expected) == true, "\(url): \(problem ?? "accepted")")
        }
    }

    @Test func anErrorShowsTheURLWithoutItsCredentials() {
        #expect(BaseURLRule.shown("http://user:sk-secret@host:80/v1") == "http://…@host:80/v1")
        #expect(BaseURLRule.shown("http://user:pa/ss@host/v1") == "http://…@host/v1", "a / in the password ends nothing")
        #expect(BaseURLRule.shown("http://u:se?cret@host/v1") == "http://…@host/v1")
        #expect(BaseURLRule.shown("https://api.openai.com/v1") == "https://api.openai.com/v1")
    }
}
