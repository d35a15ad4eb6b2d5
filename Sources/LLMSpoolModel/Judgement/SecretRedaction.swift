/// Blanks the configured API keys out of what a provider sent back: a provider (or a proxy
/// in front of it) that echoes the key it was sent in an error ("Incorrect API key
/// provided: sk-…") would otherwise put it in the failure record, the task record and the
/// log. Pure.
public struct SecretRedaction: Sendable, Equatable {
    /// What stands in a secret's place.
    public static let placeholder = Array("<redacted>".utf8)
    /// Shorter values are not searched for: blanking every occurrence of a few common
    /// bytes would garble the text, and no provider's key is that short.
    public static let shortest = 8

    private let secrets: [[UInt8]]

    public init(secrets: [String] = []) {
        // Longest first: a key that contains another is blanked whole.
        self.secrets = Array(Set(secrets.map { Array($0.utf8) }.filter { $0.count >= Self.shortest })).sorted { $0.count > $1.count }
    }

    public var isEmpty: Bool { secrets.isEmpty }

    public func redact(_ bytes: [UInt8]) -> [UInt8] {
        var text = bytes
        for secret in secrets { text = Self.replace(secret, in: text) }
        return text
    }

    public func redact(_ text: String) -> String {
        guard !secrets.isEmpty else { return text }
        let bytes = Array(text.utf8)
        let redacted = redact(bytes)
        return redacted == bytes ? text : String(decoding: redacted, as: UTF8.self)
    }

    public func redact(_ failure: AttemptFailure) -> AttemptFailure {
        guard !secrets.isEmpty else { return failure }
        return AttemptFailure(failure.kind, redact(failure.message), httpStatus: failure.httpStatus, providerBody: failure.providerBody.map(redact),
                              curlCode: failure.curlCode, timer: failure.timer, embeddedCode: failure.embeddedCode)
    }

    /// A background lane step's answer: the provider's error text of a refused upload,
    /// create, list, poll, download or cancel reaches the log, the group's abandonment and
    /// its members' sending live; the status a poll read is recorded in `state/remote`.
    public func redact(_ event: RemoteBatchMachine.Event) -> RemoteBatchMachine.Event {
        guard !secrets.isEmpty else { return event }
        switch event {
        case .failed(let retryable, let retryAfter, let message):
            return .failed(retryable: retryable, retryAfter: retryAfter, message: redact(message))
        case .polled(var status):
            status.status = redact(status.status)
            return .polled(status)
        case .start, .uploaded, .created, .createUncertain, .listed, .inspected, .downloaded, .split, .published, .withdrawn, .cancelRequested:
            return event
        }
    }

    static func replace(_ secret: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= secret.count, let first = secret.first else { return bytes }
        var output: [UInt8] = []
        var copied = 0
        var index = 0
        let last = bytes.count - secret.count
        while index <= last {
            if bytes[index] == first && bytes[index..<(index + secret.count)].elementsEqual(secret) {
                if output.isEmpty { output.reserveCapacity(bytes.count) }
                output.append(contentsOf: bytes[copied..<index])
                output.append(contentsOf: placeholder)
                index += secret.count
                copied = index
            } else {
                index += 1
            }
        }
        guard copied > 0 else { return bytes }
        output.append(contentsOf: bytes[copied...])
        return output
    }
}
