import Testing
@testable import LLMSpoolModel

@Suite struct ProviderRequestIDTests {
    @Test func eitherProvidersHeaderNamesTheRequest() {
        #expect(ProviderRequestID.from(headers: ["x-request-id": " req_abc \t"]) == "req_abc")
        #expect(ProviderRequestID.from(headers: ["x-request-id": "req\r\n"]) == nil)
        #expect(ProviderRequestID.from(headers: ["request-id": "req_011CS"]) == "req_011CS")
        #expect(ProviderRequestID.from(headers: ["x-request-id": "a", "request-id": "b"]) == "a")
        #expect(ProviderRequestID.from(headers: ["content-type": "application/json"]) == nil)
    }

    @Test func aValueFromTheNetworkIsKeptOnlyWhenShortAndPrintable() {
        #expect(ProviderRequestID.from(headers: ["x-request-id": ""]) == nil)
        #expect(ProviderRequestID.from(headers: ["x-request-id": "req\u{1B}[31m"]) == nil)
        #expect(ProviderRequestID.from(headers: ["x-request-id": "a b"]) == nil)
        #expect(ProviderRequestID.from(headers: ["x-request-id": "é"]) == nil)
        #expect(ProviderRequestID.from(headers: ["x-request-id": String(repeating: "r", count: ProviderRequestID.limit)])?.count == ProviderRequestID.limit)
        #expect(ProviderRequestID.from(headers: ["x-request-id": String(repeating: "r", count: ProviderRequestID.limit + 1)]) == nil)
    }

    @Test func anIDHoldingAConfiguredKeyIsDropped() {
        let redaction = SecretRedaction(secrets: ["sk-SECRET-canary-1234"])
        #expect(ProviderRequestID.from(headers: ["x-request-id": "sk-SECRET-canary-1234"], redaction: redaction) == nil)
        #expect(ProviderRequestID.from(headers: ["request-id": "req_sk-SECRET-canary-1234_x"], redaction: redaction) == nil)
        #expect(ProviderRequestID.from(headers: ["request-id": "req_0123"], redaction: redaction) == "req_0123")
    }
}
