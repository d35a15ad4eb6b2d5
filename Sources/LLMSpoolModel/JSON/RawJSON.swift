
/// A validating JSON reader that keeps every value as the bytes it was written with:
/// strings stay escaped, so a streamed answer's text can be copied into the result
/// document without being decoded and encoded again. Accepts what Foundation's parser
/// accepts (strict UTF-8, paired surrogate escapes, finite numbers). Pure.
public struct RawJSON: Sendable {
    /// One value, located by byte offsets into the buffer it was read from.
    public indirect enum Value: Sendable, Equatable {
        /// Members in document order; keys are decoded.
        case object([Member], Range<Int>)
        case array([Value], Range<Int>)
        /// `escaped` is the text between the quotes, as written.
        case string(escaped: Range<Int>)
        case number(Range<Int>)
        case bool(Bool, Range<Int>)
        case null(Range<Int>)

        /// The value's whole text, quotes included.
        public var range: Range<Int> {
            switch self {
            case .object(_, let range), .array(_, let range), .number(let range), .bool(_, let range), .null(let range): range
            case .string(let escaped): (escaped.lowerBound - 1)..<(escaped.upperBound + 1)
            }
        }

        public var isNull: Bool {
            if case .null = self { return true }
            return false
        }

        public subscript(key: String) -> Value? {
            guard case .object(let members, _) = self else { return nil }
            return members.last { $0.key == key }?.value
        }
    }

    /// One member of an object.
    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: Value
    }

    /// Why the bytes are not JSON.
    public struct SyntaxError: Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Deep enough for any real answer; bounds the recursion on hostile input.
    public static let maximumDepth = 128

    /// Reads one JSON document (surrounding whitespace allowed, nothing else), nested at
    /// most `maximumDepth` deep (a document that wraps an answer may go a little deeper).
    public static func parse(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int = RawJSON.maximumDepth) throws(SyntaxError) -> Value {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count > 0 else {
            throw SyntaxError(offset: 0, reason: "empty input")
        }
        var reader = Reader(bytes: base, count: bytes.count, maximumDepth: maximumDepth)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.position == reader.count else { throw SyntaxError(offset: reader.position, reason: "unexpected text after the value") }
        return value
    }

    /// The value, or nil when the bytes are not JSON: for readers to whom a body that is
    /// not JSON simply lacks what they look for.
    public static func valueIfJSON(_ bytes: [UInt8]) -> Value? {
        do {
            return try parse(bytes)
        } catch {
            return nil
        }
    }

    public static func valueIfJSON(_ bytes: UnsafeRawBufferPointer) -> Value? {
        do {
            return try parse(bytes)
        } catch {
            return nil
        }
    }

    public static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> Value {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(SyntaxError) -> Value in try parse(buffer) }
        }
        return try result.get()
    }

    /// The decoded text of a string value read from `bytes`; nil for any other value.
    public static func string(_ value: Value, in bytes: [UInt8]) -> String? {
        guard case .string(let escaped) = value, escaped.upperBound <= bytes.count else { return nil }
        return bytes.withUnsafeBytes { decodeString(UnsafeRawBufferPointer(rebasing: $0[escaped])) }
    }

    /// Decodes the escaped text of a string value.
    public static func decodeString(_ escaped: UnsafeRawBufferPointer) -> String {
        guard escaped.contains(UInt8(ascii: "\\")) else { return String(decoding: escaped, as: UTF8.self) }
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        func flush() {
            scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
            utf8.removeAll(keepingCapacity: true)
        }
        func hex(_ at: Int) -> UInt32 {
            var value: UInt32 = 0
            for offset in 0..<4 { value = value << 4 | UInt32(Reader.hexValue(escaped[at + offset]) ?? 0) }
            return value
        }
        var index = 0
        while index < escaped.count {
            let byte = escaped[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < escaped.count else {
                utf8.append(byte)
                index += 1
                continue
            }
            let kind = escaped[index + 1]
            index += 2
            switch kind {
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "u") where index + 4 <= escaped.count:
                var scalar = hex(index)
                index += 4
                if (0xD800..<0xDC00).contains(scalar), index + 6 <= escaped.count, escaped[index] == UInt8(ascii: "\\") {
                    let low = hex(index + 2)
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        index += 6
                    }
                }
                flush()
                scalars.append(Unicode.Scalar(scalar) ?? "\u{FFFD}")
            default: utf8.append(kind)
            }
        }
        flush()
        return String(scalars)
    }

    /// The cursor over one buffer. Pointer arithmetic, not subscripts of a collection:
    /// strings of many kilobytes are scanned eight bytes at a time.
    struct Reader {
        let bytes: UnsafePointer<UInt8>
        let count: Int
        let maximumDepth: Int
        var position = 0

        init(bytes: UnsafePointer<UInt8>, count: Int, maximumDepth: Int) {
            self.bytes = bytes
            self.count = count
            self.maximumDepth = maximumDepth
        }

        static func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        func fail(_ reason: String) -> SyntaxError { SyntaxError(offset: position, reason: reason) }

        mutating func skipWhitespace() {
            while position < count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(SyntaxError) -> Value {
            guard position < count else { throw fail("unexpected end of input") }
            let start = position
            switch bytes[position] {
            case UInt8(ascii: "{"):
                guard depth < maximumDepth else { throw fail("nested too deeply") }
                return try object(depth: depth + 1)
            case UInt8(ascii: "["):
                guard depth < maximumDepth else { throw fail("nested too deeply") }
                return try array(depth: depth + 1)
            case UInt8(ascii: "\""):
                return .string(escaped: try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true, start..<position)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false, start..<position)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null(start..<position)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return .number(try number())
            default:
                throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(SyntaxError) {
            let length = word.utf8CodeUnitCount
            guard count - position >= length else { throw fail("invalid literal") }
            let expected = word.utf8Start
            for offset in 0..<length where bytes[position + offset] != expected[offset] { throw fail("invalid literal") }
            position += length
        }

        mutating func object(depth: Int) throws(SyntaxError) -> Value {
            let start = position
            position += 1
            var members: [Member] = []
            skipWhitespace()
            if position < count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members, start..<position)
            }
            while true {
                guard position < count, bytes[position] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let key = try string()
                skipWhitespace()
                guard position < count, bytes[position] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                position += 1
                skipWhitespace()
                let value = try value(depth: depth)
                members.append(Member(key: RawJSON.decodeString(UnsafeRawBufferPointer(start: bytes + key.lowerBound, count: key.count)), value: value))
                skipWhitespace()
                guard position < count else { throw fail("unterminated object") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    skipWhitespace()
                    continue
                }
                guard bytes[position] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                position += 1
                return .object(members, start..<position)
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> Value {
            let start = position
            position += 1
            var elements: [Value] = []
            skipWhitespace()
            if position < count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements, start..<position)
            }
            while true {
                elements.append(try value(depth: depth))
                skipWhitespace()
                guard position < count else { throw fail("unterminated array") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    skipWhitespace()
                    continue
                }
                guard bytes[position] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                position += 1
                return .array(elements, start..<position)
            }
        }

        /// Whether any of eight bytes is a quote, a backslash, a control character or
        /// not ASCII: those need a closer look; the rest is skipped a word at a time.
        @inline(__always)
        static func needsAttention(_ word: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let zeroQuote = (quote &- ones) & ~quote
            let zeroBackslash = (backslash &- ones) & ~backslash
            let control = word &- (ones &* 0x20)
            return ((zeroQuote | zeroBackslash | control) & highs) | (word & highs) != 0
        }

        /// Scans a string starting at its opening quote; returns the range between the quotes.
        mutating func string() throws(SyntaxError) -> Range<Int> {
            position += 1
            let start = position
            while true {
                while count - position >= 8 {
                    let word = UInt64(littleEndian: UnsafeRawPointer(bytes + position).loadUnaligned(as: UInt64.self))
                    if RawJSON.Reader.needsAttention(word) { break }
                    position += 8
                }
                guard position < count else { throw fail("unterminated string") }
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    position += 1
                    return start..<(position - 1)
                case UInt8(ascii: "\\"):
                    try escape()
                case 0..<0x20:
                    throw fail("control character in a string")
                case 0x80...:
                    try multibyte()
                default:
                    position += 1
                }
            }
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard count - position >= 4 else { throw fail("short \\u escape") }
            var value: UInt32 = 0
            for offset in 0..<4 {
                guard let digit = Reader.hexValue(bytes[position + offset]) else { throw fail("invalid \\u escape") }
                value = value << 4 | UInt32(digit)
            }
            position += 4
            return value
        }

        mutating func escape() throws(SyntaxError) {
            guard position + 1 < count else { throw fail("unterminated escape") }
            switch bytes[position + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                position += 2
            case UInt8(ascii: "u"):
                position += 2
                let unit = try hex4()
                if (0xDC00..<0xE000).contains(unit) { throw fail("unpaired low surrogate") }
                if (0xD800..<0xDC00).contains(unit) {
                    guard count - position >= 2, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired high surrogate")
                    }
                    position += 2
                    guard (0xDC00..<0xE000).contains(try hex4()) else { throw fail("unpaired high surrogate") }
                }
            default:
                throw fail("invalid escape")
            }
        }

        /// One UTF-8 sequence of two to four bytes, checked as strictly as the standard asks.
        mutating func multibyte() throws(SyntaxError) {
            let lead = bytes[position]
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: throw fail("invalid UTF-8")
            }
            guard count - position >= length else { throw fail("truncated UTF-8") }
            let second = bytes[position + 1]
            guard second >= low, second <= high else { throw fail("invalid UTF-8") }
            for offset in 2..<max(2, length) where bytes[position + offset] & 0xC0 != 0x80 {
                throw fail("invalid UTF-8")
            }
            position += length
        }

        mutating func number() throws(SyntaxError) -> Range<Int> {
            let start = position
            var plain = true
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < count else { throw fail("invalid number") }
            if bytes[position] == UInt8(ascii: "0") {
                position += 1
            } else {
                guard digits() > 0 else { throw fail("invalid number") }
            }
            if position < count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { throw fail("invalid number") }
            }
            if position < count, bytes[position] | 0x20 == UInt8(ascii: "e") {
                plain = false
                position += 1
                if position < count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                guard digits() > 0 else { throw fail("invalid number") }
            }
            if !plain || position - start > 300 {
                // Foundation refuses numbers a Double cannot hold; so does this reader.
                let text = String(decoding: UnsafeRawBufferPointer(start: bytes + start, count: position - start), as: UTF8.self)
                guard let value = Double(text), value.isFinite else { throw SyntaxError(offset: start, reason: "number out of range") }
            }
            return start..<position
        }

        mutating func digits() -> Int {
            let start = position
            while position < count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") { position += 1 }
            return position - start
        }
    }
}
