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

/// A gateway that echoes the Authorization header base64-encoded still gives nothing away.
@Suite struct SecretRedactionBase64Tests {
    static func base64(_ text: String) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        let bytes = Array(text.utf8)
        var out = ""
        for group in stride(from: 0, to: bytes.count, by: 3) {
            let chunk = Array(bytes[group..<min(group + 3, bytes.count)]) + [0, 0]
            let value = Int(chunk[0]) << 16 | Int(chunk[1]) << 8 | Int(chunk[2])
            let characters = [18, 12, 6, 0].map { alphabet[value >> $0 & 63] }
            let kept = bytes.count - group >= 3 ? 4 : bytes.count - group + 1
            out += String(characters.prefix(kept)) + String(repeating: "=", count: 4 - kept)
        }
        return out
    }

    @Test(arguments: ["", "x", "xy", "Authorization: "])
    func aBase64EchoOfTheKeyOrItsHeaderIsBlanked(prefix: String) {
        let key = "sk-test-SECRET-5f1a9c77e2"
        let redaction = SecretRedaction(secrets: [key])
        for echoed in [prefix + key, prefix + "Bearer " + key] {
            let encoded = Self.base64(echoed)
            let body = "{\"error\": {\"message\": \"bad token \(encoded)\"}}"
            let redacted = redaction.redact(body)
            #expect(!redacted.contains(encoded), "\(redacted)")
            #expect(redacted.contains("<redacted>"))
            // What is left of the encoding cannot give the key back.
            #expect(!redacted.contains(String(Self.base64(key).prefix(12))))
        }
    }
}
