/// JSON text built by hand in the pure target, where the records of batches are composed:
/// strings escaped, and answers made single-line for JSONL without being parsed into values.
public enum JSONWriter {
    /// `value` as a JSON string, quotes included.
    public static func quoted(_ value: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count + 2)
        appendQuoted(value, to: &out)
        return out
    }

    /// Appends `value` as a JSON string, quotes included: control characters, quotes and
    /// backslashes escaped (`\u001f`, lower-case hex), everything else as its UTF-8.
    @inlinable public static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        out.append(0x22)
        // Ids, names and times rarely need an escape: then the bytes go in with one copy.
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            out.append(contentsOf: value.utf8)
            out.append(0x22)
            return
        }
        for byte in value.utf8 {
            switch byte {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, 0x6E]
            case 0x0D: out += [0x5C, 0x72]
            case 0x09: out += [0x5C, 0x74]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }

    /// Appends `value` in decimal, as `"\(value)"` writes it, without making a string.
    @inlinable public static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(0x2D) }
        appendDecimal(value.magnitude, to: &out)
    }

    /// The same for an unsigned number.
    @inlinable public static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        // Twenty digits hold UInt64.max; they are made from the last one.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var index = 20
            var rest = value
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: buffer[index...])
        }
    }

    /// Valid JSON without the blanks between its tokens: an answer a server pretty-printed
    /// becomes one JSONL line. A JSON string cannot hold a raw newline, so only blanks
    /// outside strings go, and the value is the same.
    public static func compact(_ json: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count)
        var inString = false
        var escaped = false
        for byte in json {
            if inString {
                if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
                out.append(byte)
                continue
            }
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D: continue
            case 0x22: inString = true
            default: break
            }
            out.append(byte)
        }
        return out
    }

    /// The bytes as a JSON value for embedding: compacted when they are JSON, else quoted as text.
    public static func embeddable(_ bytes: [UInt8]) -> [UInt8] {
        parsed(bytes) == nil ? quoted(String(decoding: bytes, as: UTF8.self)) : compact(bytes)
    }

    /// The bytes parsed, or nil when they are not JSON of a sane depth: a body a server
    /// sent, which is then shown as text instead.
    public static func parsed(_ bytes: [UInt8]) -> RawJSON.Value? {
        // Checked for depth first: the parser recurses as deep as the bytes nest.
        guard RequestValidator.firstOffset(deeperThan: RequestValidator.defaultMaxDepth, in: bytes) == nil else { return nil }
        do {
            return try RawJSON.parse(bytes)
        } catch {
            return nil
        }
    }

    /// An object from members already encoded, in the order given.
    public static func object(_ members: [(String, [UInt8])]) -> [UInt8] {
        var out: [UInt8] = [0x7B]
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(0x2C) }
            out += quoted(member.0)
            out.append(0x3A)
            out += member.1
        }
        out.append(0x7D)
        return out
    }

    /// An array of elements already encoded, in the order given.
    public static func array(_ elements: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = [0x5B]
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(0x2C) }
            out += element
        }
        out.append(0x5D)
        return out
    }

    /// A number or null.
    public static func number(_ value: Int?) -> [UInt8] {
        guard let value else { return Array("null".utf8) }
        return Array(String(value).utf8)
    }

    public static let null: [UInt8] = Array("null".utf8)
}
