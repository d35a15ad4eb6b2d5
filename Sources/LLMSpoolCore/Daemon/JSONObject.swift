import Foundation

/// Small helpers over Foundation's JSON for records and answers.
package enum JSONObject {
    package static func parse(_ bytes: [UInt8]) -> [String: Any]? {
        // Bytes that are not a JSON object have no members: nil is the answer.
        try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    }

    /// A value for a record: the parsed JSON when the bytes are JSON, else the text.
    package static func embeddable(_ bytes: [UInt8]) -> Any {
        // Not JSON: kept as text, which is the answer.
        if let value = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) { return value }
        return String(decoding: bytes, as: UTF8.self)
    }

    package static func encode(_ object: Any) -> [UInt8] {
        // Records are built of JSON values here, which always serialize.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return Array(data) + [0x0A]
    }
}

/// JSON text written by hand where Foundation's encoder is too slow for how often it runs.
package enum JSONText {
    package static func quoted(_ value: String) -> String {
        var text = ""
        appendQuoted(value, to: &text)
        return text
    }

    /// Appends `value` as a JSON string, quotes included.
    package static func appendQuoted(_ value: String, to text: inout String) {
        text += "\""
        // Ids, names and messages rarely need an escape: then the string goes in whole,
        // not scalar by scalar (the live status quotes two per transfer every second).
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            text += value
            text += "\""
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
