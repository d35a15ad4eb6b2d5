import Testing
@testable import LLMSpoolModel

@Suite struct SecretRedactionTests {
    let redaction = SecretRedaction(secrets: ["sk-test-SECRET-5f1a9c", "short", "sk-test-SECRET-5f1a9c-longer-one"])

    @Test func everyOccurrenceIsBlankedAndTheRestKept() {
        let text = "Incorrect API key provided: sk-test-SECRET-5f1a9c. Again sk-test-SECRET-5f1a9csk-test-SECRET-5f1a9c!"
        #expect(redaction.redact(text) == "Incorrect API key provided: <redacted>. Again <redacted><redacted>!")
        #expect(redaction.redact(Array("sk-test-SECRET-5f1a9".utf8)) == Array("sk-test-SECRET-5f1a9".utf8), "a prefix is not the key")
    }

    @Test func aKeyThatContainsAnotherIsBlankedWhole() {
        #expect(redaction.redact("x sk-test-SECRET-5f1a9c-longer-one y") == "x <redacted> y")
    }

    @Test func shortValuesAreNotSearchedFor() {
        #expect(redaction.redact("a short text") == "a short text")
        #expect(SecretRedaction(secrets: ["", "1234567"]).isEmpty)
    }

    @Test func aFailuresMessageAndBodyAreBlanked() {
        let body = Array(#"{"error": {"message": "Incorrect API key provided: sk-test-SECRET-5f1a9c"}}"#.utf8)
        let failure = AttemptFailure(.http, "the endpoint answered HTTP 401: Incorrect API key provided: sk-test-SECRET-5f1a9c",
                                     httpStatus: 401, providerBody: body)
        let redacted = redaction.redact(failure)
        #expect(redacted.message == "the endpoint answered HTTP 401: Incorrect API key provided: <redacted>")
        #expect(redacted.providerBody == Array(#"{"error": {"message": "Incorrect API key provided: <redacted>"}}"#.utf8))
        #expect(redacted.kind == .http && redacted.httpStatus == 401)
    }

    /// The record keeps the body decoded: a key with escaped characters would be written
    /// in clear. A proxy quoting it in another case gives most of it away too.
    @Test func aKeyEchoedEscapedOrInAnotherCaseIsBlanked() {
        let escaped = #"{"message": "key: \u0073\u006B-test-SECRET-5f1a9\u0063."}"#
        #expect(redaction.redact(escaped) == #"{"message": "key: <redacted>."}"#)
        #expect(redaction.redact("bearer SK-TEST-secret-5F1A9C!") == "bearer <redacted>!")
        #expect(SecretRedaction(secrets: ["sk/test/SECRET"]).redact(#"a sk\/test\/SECRET b"#) == "a <redacted> b")
        // Escapes that stand for nothing of the key, or are cut short, are left alone.
        for kept in [#"sk-test-SECRET-5f1a9\u00e7"#, #"sk-test-SECRET-5f1a9\u006"#, #"sk-test-SECRET-5f1a9\c"#, #"sk-test-SECRET-5f1a9\"#] {
            #expect(redaction.redact(kept) == kept, "\(kept)")
        }
    }

    @Test func aLaneStepsErrorTextAndPolledStatusAreBlanked() {
        let failed = RemoteBatchMachine.Event.failed(retryable: true, retryAfter: 3, message: "the poll answered HTTP 401: Incorrect API key provided: sk-test-SECRET-5f1a9c.")
        #expect(redaction.redact(failed) == .failed(retryable: true, retryAfter: 3, message: "the poll answered HTTP 401: Incorrect API key provided: <redacted>."))
        let polled = RemoteBatchMachine.Event.polled(RemoteBatchStatus(status: "sk-test-SECRET-5f1a9c", total: 2, completed: 1, outputFileID: "file-1"))
        #expect(redaction.redact(polled) == .polled(RemoteBatchStatus(status: "<redacted>", total: 2, completed: 1, outputFileID: "file-1")))
        #expect(redaction.redact(RemoteBatchMachine.Event.created(batchID: "batch_1")) == .created(batchID: "batch_1"))
        #expect(SecretRedaction().redact(failed) == failed, "no key: the event as it came")
    }
}
