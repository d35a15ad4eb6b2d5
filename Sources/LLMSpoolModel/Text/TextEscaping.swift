/// How text from outside (names, messages, headers) is made safe to print on one line.
public enum TextEscaping {
    /// Escapes control characters, backslashes and invalid UTF-8 as `\xNN`, and the
    /// characters that reorder or hide text on a terminal (bidi controls, zero-width
    /// characters, line separators) as `\u{NNNN}`: a name cannot make a line read other
    /// than it is.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: out += "\\\\"
            case 0..<0x20, 0x7F, 0x80..<0xA0:
                out += "\\x" + leftPadded(String(scalar.value, radix: 16, uppercase: false), to: 2)
            case 0x061C, 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x2064, 0x2066...0x2069, 0xFEFF:
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: false) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` with leading zeros up to `width` characters.
    public static func leftPadded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    /// `text` without leading and trailing spaces and tabs.
    public static func trimmed(_ text: some StringProtocol) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }) else { return "" }
        let last = text.lastIndex(where: { !isBlank($0) })!
        return String(text[first...last])
    }
}
