import FoundationEssentials

/// RFC 3339 timestamps as Anthropic's `anthropic-ratelimit-*-reset` headers carry them:
/// `2026-12-01T15:33:07Z`, with optional fractional seconds and a `Z` or `±hh:mm` offset.
/// Read by hand like `HTTPDate`: a header is hostile input, and nothing in it may trap.
public enum RFC3339Date {
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(TextEscaping.trimmed(text).utf8)
        // YYYY-MM-DDTHH:MM:SS is 19 bytes; the longest sensible text is far below 64.
        guard bytes.count >= 20, bytes.count <= 64 else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<(start + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        func byte(_ at: Int, is expected: Character) -> Bool {
            at < bytes.count && bytes[at] == expected.asciiValue!
        }
        guard let year = digits(0, 4), byte(4, is: "-"), let month = digits(5, 2), byte(7, is: "-"),
              let day = digits(8, 2), byte(10, is: "T") || byte(10, is: "t") || byte(10, is: " "),
              let hour = digits(11, 2), byte(13, is: ":"), let minute = digits(14, 2), byte(16, is: ":"),
              let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60 else { return nil }
        var position = 19
        var fraction = 0.0
        if byte(position, is: ".") {
            position += 1
            var scale = 0.1
            let first = position
            while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                fraction += Double(bytes[position] - 0x30) * scale
                scale /= 10
                position += 1
            }
            guard position > first else { return nil }
        }
        var offset = 0
        if byte(position, is: "Z") || byte(position, is: "z") {
            position += 1
        } else if byte(position, is: "+") || byte(position, is: "-") {
            guard let hours = digits(position + 1, 2), byte(position + 3, is: ":"), let minutes = digits(position + 4, 2),
                  hours < 24, minutes < 60 else { return nil }
            offset = (hours * 3600 + minutes * 60) * (bytes[position] == 0x2D ? -1 : 1)
            position += 6
        } else {
            return nil
        }
        guard position == bytes.count else { return nil }
        let days = HTTPDate.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
