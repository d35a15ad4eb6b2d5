import Foundation
import Glibc

/// RFC 3339 timestamps with milliseconds, as every record writes them.
public enum Timestamp {
    nonisolated(unsafe) private static let formatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
    private static let lock = NSLock()

    /// `2026-11-30T22:10:05.123Z`, as the formatter writes it, but built by hand: the
    /// formatter goes through ICU under a lock, and records and the live status are
    /// written often, from several threads.
    public static func string(_ date: Date) -> String {
        switch text(date) {
        case .fixed(let bytes): String(decoding: bytes, as: UTF8.self)
        case .other(let text): text
        }
    }

    /// Appends `string` as a JSON string, quotes included, to a record written as bytes.
    public static func appendQuoted(_ date: Date, to out: inout [UInt8]) {
        switch text(date) {
        case .fixed(let bytes):
            out.append(0x22)
            out.append(contentsOf: bytes)
            out.append(0x22)
        case .other(let text):
            JSONWriter.appendQuoted(text, to: &out)
        }
    }

    private enum Text {
        /// The 24 bytes of a year within 0 to 9999.
        case fixed([UInt8])
        case other(String)
    }

    private static func text(_ date: Date) -> Text {
        // A time read from a file may be any number: one past a hundred million years either
        // way (or not a number) is written as that bound, never trapped on.
        let bound = 3.2e18
        let scaled = (date.timeIntervalSince1970 * 1000).rounded()
        let milliseconds = Int64(scaled.isNaN ? 0 : min(max(scaled, -bound), bound))
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else {
            lock.lock()
            defer { lock.unlock() }
            return .other(formatter.string(from: date))
        }
        // Digits into a fixed buffer: the live status formats one of these per transfer in
        // flight every second.
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int, _ width: Int, at offset: Int) {
            var rest = value
            for index in stride(from: offset + width - 1, through: offset, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
        }
        let year = Int(parts.tm_year) + 1900
        // The fixed layout holds years 0 to 9999; the others are written field by field.
        guard (0...9999).contains(year) else { return .other(fields(parts, year: year, fraction: fraction)) }
        put(year, 4, at: 0)
        bytes[4] = UInt8(ascii: "-")
        put(Int(parts.tm_mon) + 1, 2, at: 5)
        bytes[7] = UInt8(ascii: "-")
        put(Int(parts.tm_mday), 2, at: 8)
        bytes[10] = UInt8(ascii: "T")
        put(Int(parts.tm_hour), 2, at: 11)
        bytes[13] = UInt8(ascii: ":")
        put(Int(parts.tm_min), 2, at: 14)
        bytes[16] = UInt8(ascii: ":")
        put(Int(parts.tm_sec), 2, at: 17)
        bytes[19] = UInt8(ascii: ".")
        put(fraction, 3, at: 20)
        bytes[23] = UInt8(ascii: "Z")
        return .fixed(bytes)
    }

    /// The same text for a year outside 0-9999, each field padded to its width.
    private static func fields(_ parts: tm, year: Int, fraction: Int) -> String {
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(digits(year, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-\(digits(Int(parts.tm_mday), 2))T"
            + "\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):\(digits(Int(parts.tm_sec), 2)).\(digits(fraction, 3))Z"
    }

    /// A time for people: `07:58:34` in local time when it is within the next or last 20
    /// hours of `now`, else the full RFC 3339 form (a clock time alone would be ambiguous).
    public static func clock(_ date: Date, now: Date = Date()) -> String {
        guard abs(date.timeIntervalSince(now)) < 72_000 else { return string(date) }
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return string(date) }
        return String(format: "%02d:%02d:%02d", Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    public static func date(_ text: String) -> Date? {
        lock.lock()
        defer { lock.unlock() }
        return formatter.date(from: text)
    }
}
