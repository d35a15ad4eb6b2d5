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
        let keys = secrets.map { Array($0.utf8) }.filter { $0.count >= Self.shortest }
        // A proxy may also echo the header it was sent base64-encoded (a debugging gateway,
        // a JWT-like error token): the key's run of whole base64 groups, at each of the three
        // alignments, in both alphabets, alone and after "Bearer ".
        let encoded = keys.flatMap { key in
            [key, Array("Bearer ".utf8) + key].flatMap(Self.base64Runs)
        }.filter { $0.count >= Self.shortest }
        // Longest first: a key that contains another is blanked whole.
        self.secrets = Array(Set(keys + encoded)).sorted { $0.count > $1.count }
    }

    /// The base64 characters that encode `bytes` whatever precedes them: for each of the
    /// three offsets `bytes` can start at within a 3-byte group, the groups made of its
    /// bytes alone; in the standard and the URL-safe alphabet.
    static func base64Runs(_ bytes: [UInt8]) -> [[UInt8]] {
        let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var runs: [[UInt8]] = []
        for offset in 0..<3 {
            let padded = [UInt8](repeating: 0, count: offset) + bytes
            let first = (offset + 2) / 3 * 3
            let end = padded.count / 3 * 3
            guard end - first >= 3 else { continue }
            var run: [UInt8] = []
            for group in stride(from: first, to: end, by: 3) {
                let value = UInt32(padded[group]) << 16 | UInt32(padded[group + 1]) << 8 | UInt32(padded[group + 2])
                for shift in [18, 12, 6, 0] { run.append(standard[Int(value >> UInt32(shift) & 63)]) }
            }
            runs.append(run)
            runs.append(run.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0 })
        }
        return runs
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
        case .gone(let message):
            return .gone(message: redact(message))
        case .polled(var status):
            status.status = redact(status.status)
            return .polled(status)
        case .start, .uploaded, .created, .createUncertain, .listed, .inspected, .downloaded, .split, .published, .withdrawn, .cancelRequested, .due:
            return event
        }
    }

    /// Every occurrence of `secret` in `bytes`, as sent or as a provider may echo it: in
    /// another case (a proxy that lower-cases what it quotes), and with any of its
    /// characters JSON-escaped (`\u0073`, `\/`), since the record keeps the body decoded.
    static func replace(_ secret: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= secret.count, !secret.isEmpty else { return bytes }
        var output: [UInt8] = []
        var copied = 0
        var index = 0
        while index < bytes.count {
            if let end = matchEnd(secret, in: bytes, at: index) {
                if output.isEmpty { output.reserveCapacity(bytes.count) }
                output.append(contentsOf: bytes[copied..<index])
                output.append(contentsOf: placeholder)
                index = end
                copied = index
            } else {
                index += 1
            }
        }
        guard copied > 0 else { return bytes }
        output.append(contentsOf: bytes[copied...])
        return output
    }

    /// Where a match of `secret` starting at `start` ends, or nil.
    static func matchEnd(_ secret: [UInt8], in bytes: [UInt8], at start: Int) -> Int? {
        var index = start
        for expected in secret {
            guard index < bytes.count else { return nil }
            let byte = bytes[index]
            if folded(byte) == folded(expected) {
                index += 1
            } else if byte == UInt8(ascii: "\\"), let (decoded, length) = escape(in: bytes, at: index), folded(decoded) == folded(expected) {
                index += length
            } else {
                return nil
            }
        }
        return index
    }

    /// ASCII letters in one case; other bytes as they are.
    private static func folded(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    /// The ASCII byte a JSON escape at `index` stands for (`\uXXXX` below 0x80, `\/`), and
    /// the escape's length; nil for any other escape, which no key's character needs.
    private static func escape(in bytes: [UInt8], at index: Int) -> (UInt8, Int)? {
        guard index + 1 < bytes.count else { return nil }
        if bytes[index + 1] == UInt8(ascii: "/") { return (UInt8(ascii: "/"), 2) }
        guard bytes[index + 1] == UInt8(ascii: "u"), index + 5 < bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[(index + 2)...(index + 5)] {
            guard let digit = hexDigit(byte) else { return nil }
            value = value << 4 | digit
        }
        return value < 0x80 ? (UInt8(value), 6) : nil
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
