import Testing
@testable import LLMSpoolModel

/// The provider's words in an error body: `message(inBody:)` takes `error.message` or an
/// `error` that is itself a string; `objectMessage(inBody:)`, which the batch APIs' answer
/// readers share, takes only `error.message`.
@Suite struct ProviderErrorMessageTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func anErrorObjectsMessageIsReadByBoth() {
        let body = bytes(#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#)
        #expect(ProviderError.message(inBody: body) == "slow down")
        #expect(ProviderError.objectMessage(inBody: body) == "slow down")
    }

    @Test func aStringErrorIsAMessageOnlyWhereStringsAreAllowed() {
        let body = bytes(#"{"error":"quota exceeded"}"#)
        #expect(ProviderError.message(inBody: body) == "quota exceeded")
        #expect(ProviderError.objectMessage(inBody: body) == nil)
    }

    @Test func aBodyWithoutAnErrorMessageHasNone() {
        for text in ["", "<html>", "{", #"{"error":{"type":"x"}}"#, #"{"error":{"message":3}}"#, #"{"message":"no error member"}"#, "[1]"] {
            #expect(ProviderError.objectMessage(inBody: bytes(text)) == nil, "\(text)")
        }
    }
}
