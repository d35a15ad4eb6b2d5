/// One line of a response head as libcurl hands it over (CRLF included). Pure, and fuzzed:
/// the bytes come from the endpoint.
public enum HeaderLine: Sendable, Equatable {
    /// `HTTP/...`: a new response begins (after a 100 Continue or a redirect).
    case statusLine
    /// `name: value`, the name in lower case, the value without surrounding blanks.
    case field(name: String, value: String)
    /// The blank line at the end of the head, a folded continuation, or a line without a colon.
    case other

    /// The headers the daemon reads (retry times, rate limits, request ids, the body's
    /// type): kept past the first hundred fields a response may bury them under.
    public static func isRead(_ name: String) -> Bool {
        readNames.contains(name) || name.hasPrefix("x-ratelimit-") || name.hasPrefix("anthropic-ratelimit-")
    }

    static let readNames: Set<String> = ["retry-after", "retry-after-ms", "x-should-retry", "content-type", "content-encoding",
                                         "location", "request-id", "x-request-id"]

    /// How many fields a response keeps: the first hundred, and up to twice that of those read.
    public static func keeps(_ name: String, having count: Int) -> Bool {
        count < 100 || (count < 200 && isRead(name))
    }

    public static func parse(_ bytes: some Collection<UInt8>) -> HeaderLine {
        var line = Array(bytes)
        while let last = line.last, isBlank(last) { line.removeLast() }
        let start = line.firstIndex { !isBlank($0) } ?? line.endIndex
        guard start < line.endIndex else { return .other }
        let text = line[start...]
        if text.starts(with: [0x48, 0x54, 0x54, 0x50, 0x2F]) { return .statusLine }  // "HTTP/"
        // A continuation line of an obsolete folded header is not a new field.
        guard start == line.startIndex, let colon = text.firstIndex(of: 0x3A), colon > text.startIndex else { return .other }
        let name = String(decoding: text[..<colon].map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
        let valueBytes = text[(colon + 1)...].drop { isBlank($0) }
        return .field(name: name, value: String(decoding: valueBytes, as: UTF8.self))
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
    }
}
