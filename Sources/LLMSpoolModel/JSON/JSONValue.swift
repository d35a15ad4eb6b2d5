/// A JSON value to write: the bodies the daemon makes itself (from a prompt file) are
/// built as these and written with `encoded()`, members in the order given.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int)
    /// A number as written (already valid JSON number text).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The value as compact JSON text, UTF-8.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .integer(let number): out += Array(String(number).utf8)
        case .number(let text): out += Array(text.utf8)
        case .string(let text): JSONValue.writeString(text, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.0, into: &out)
                out.append(UInt8(ascii: ":"))
                member.1.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(0x22)
        for byte in text.utf8 {
            switch byte {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20, 0x7F:
                out += Array("\\u00".utf8) + Array(TextEscaping.leftPadded(String(byte, radix: 16), to: 2).utf8)
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }

    /// A YAML scalar as the JSON value it means (YAML 1.2's core schema): quoted scalars
    /// are strings; plain ones may be null, a boolean or a number.
    public init(yamlScalar text: String, quoted: Bool) {
        if quoted { self = .string(text); return }
        switch text {
        case "", "~", "null", "Null", "NULL": self = .null; return
        case "true", "True", "TRUE": self = .bool(true); return
        case "false", "False", "FALSE": self = .bool(false); return
        default: break
        }
        if let integer = JSONValue.integerText(text) {
            self = Int(integer).map { .integer($0) } ?? .number(integer)
            return
        }
        if let number = JSONValue.decimalText(text) { self = .number(number); return }
        self = .string(text)
    }

    /// Decimal integer text (`-12`, `+3`, `007`) as JSON number text, or nil.
    static func integerText(_ text: String) -> String? {
        var digits = Substring(text)
        var sign = ""
        if digits.first == "-" || digits.first == "+" {
            if digits.first == "-" { sign = "-" }
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let trimmed = digits.drop(while: { $0 == "0" })
        let body = trimmed.isEmpty ? "0" : String(trimmed)
        return body == "0" ? "0" : sign + body
    }

    /// Decimal text with a fraction or exponent (`0.5`, `.5`, `1e3`, `-2.5E-3`) as JSON
    /// number text, or nil. `.inf` and `.nan` are strings: JSON has no such numbers.
    static func decimalText(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        var index = 0
        var out = ""
        func digits() -> String {
            var run = ""
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { run.append(Character(UnicodeScalar(bytes[index]))); index += 1 }
            return run
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
            if bytes[index] == UInt8(ascii: "-") { out = "-" }
            index += 1
        }
        var whole = digits()
        var fraction = ""
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            fraction = digits()
        }
        guard !whole.isEmpty || !fraction.isEmpty else { return nil }
        var exponent = ""
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var sign = ""
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                sign = bytes[index] == UInt8(ascii: "-") ? "-" : ""
                index += 1
            }
            let power = digits()
            guard !power.isEmpty else { return nil }
            exponent = "e" + sign + power
        }
        guard index == bytes.count, !fraction.isEmpty || !exponent.isEmpty else { return nil }
        whole = String(whole.drop(while: { $0 == "0" }))
        out += whole.isEmpty ? "0" : whole
        if !fraction.isEmpty { out += "." + fraction }
        return out + exponent
    }
}
