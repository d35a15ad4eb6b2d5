import Foundation

/// Names JSON values the way people call them, and tells Foundation's booleans from numbers.
package enum JSONKind {
    package static func isBool(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        // Foundation parses JSON booleans into NSNumbers of ObjC type "c" (char).
        return String(cString: number.objCType) == "c"
    }

    package static func name(of value: Any) -> String {
        if value is NSNull { return "null" }
        if isBool(value) { return "a boolean" }
        if value is NSNumber { return "a number" }
        if value is String { return "a string" }
        if value is [Any] { return "an array" }
        if value is [String: Any] { return "an object" }
        return "\(type(of: value))"
    }
}
