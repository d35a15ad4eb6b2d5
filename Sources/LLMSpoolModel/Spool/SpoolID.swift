/// The spool's id as `state/.spool-id` holds it: 32 lowercase hexadecimal digits (128
/// random bits) and a newline.
public enum SpoolID {
    /// The id in `bytes`, or nil when they hold none (empty, cut short, anything else).
    public static func parse(_ bytes: [UInt8]) -> String? {
        var digits = bytes[...]
        if digits.last == 0x0A { digits = digits.dropLast() }
        guard digits.count == 32, digits.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return nil }
        return String(decoding: digits, as: UTF8.self)
    }

    /// An id made of two random 64-bit numbers.
    public static func format(_ high: UInt64, _ low: UInt64) -> String {
        [high, low].map { value in
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// What the file holds for `id`.
    public static func fileContent(_ id: String) -> [UInt8] {
        Array((id + "\n").utf8)
    }
}
