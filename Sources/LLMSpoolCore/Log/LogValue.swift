/// A log field's value, which keeps its type in JSON logs: a field written as `"\(count)"`
/// of an integer, a floating-point number or a Bool alone is that JSON type; anything else,
/// and any text around the value, is a string. Text logs print it as before.
public struct LogValue: ExpressibleByStringInterpolation, Sendable, Equatable {
    public enum Typed: Sendable, Equatable {
        case string(String)
        case integer(Int64)
        case number(Double)
        case bool(Bool)
    }

    public let typed: Typed
    /// The value as text logs print it.
    public let text: String

    public init(_ text: String) {
        typed = .string(text)
        self.text = text
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public init(stringInterpolation: StringInterpolation) {
        text = stringInterpolation.text
        if stringInterpolation.parts == 1, let alone = stringInterpolation.alone {
            typed = alone
        } else {
            typed = .string(stringInterpolation.text)
        }
    }

    /// Builds the text and remembers a typed value when it is the only part.
    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        var parts = 0
        var alone: Typed?

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            guard !literal.isEmpty else { return }
            parts += 1
            alone = nil
            text += literal
        }

        public mutating func appendInterpolation<Value: BinaryInteger>(_ value: Value) {
            parts += 1
            text += "\(value)"
            alone = Int64(exactly: value).map(Typed.integer) ?? .string("\(value)")
        }

        public mutating func appendInterpolation(_ value: Double) {
            parts += 1
            text += "\(value)"
            // JSON has no infinity or NaN: those stay text.
            alone = value.isFinite ? .number(value) : .string("\(value)")
        }

        public mutating func appendInterpolation(_ value: Bool) {
            parts += 1
            text += "\(value)"
            alone = .bool(value)
        }

        public mutating func appendInterpolation<Value>(_ value: Value) {
            parts += 1
            let described = "\(value)"
            text += described
            alone = .string(described)
        }
    }
}
