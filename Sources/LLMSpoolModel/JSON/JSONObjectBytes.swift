/// A JSON object written member by member into one buffer, in the order the caller gives
/// (sorted by the caller when the format wants sorted keys): no member is built as a
/// string of its own first, which is most of the cost of a record written per request.
public struct JSONObjectBytes {
    /// The text so far; whole once `closed` is called.
    // Inlinable, with its state visible to the daemon's module: a record is written per
    // request, and unspecialized calls across the module boundary cost as much as the
    // string building they replaced (a profile of P1).
    public var bytes: [UInt8]
    @usableFromInline let separator: [UInt8]
    @usableFromInline let colon: [UInt8]
    @usableFromInline var hasMembers = false

    /// `open` starts the text (`{` or `{\n  `), `separator` comes between members (`, ` or
    /// `,\n  `) and `colon` between a key and its value (`: ` or ` : `).
    @inlinable public init(open: String, separator: String, colon: String, capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(contentsOf: open.utf8)
        self.separator = Array(separator.utf8)
        self.colon = Array(colon.utf8)
    }

    /// Starts a member: its key, after the separator when another came before.
    @inlinable public mutating func key(_ name: String) {
        if hasMembers { bytes.append(contentsOf: separator) }
        hasMembers = true
        JSONWriter.appendQuoted(name, to: &bytes)
        bytes.append(contentsOf: colon)
    }

    @inlinable public mutating func string(_ name: String, _ value: String) {
        key(name)
        JSONWriter.appendQuoted(value, to: &bytes)
    }

    @inlinable public mutating func integer(_ name: String, _ value: Int64) {
        key(name)
        JSONWriter.appendDecimal(value, to: &bytes)
    }

    @inlinable public mutating func integer(_ name: String, _ value: Int) {
        integer(name, Int64(value))
    }

    @inlinable public mutating func integer(_ name: String, _ value: UInt64) {
        key(name)
        JSONWriter.appendDecimal(value, to: &bytes)
    }

    /// A member whose value is JSON text already.
    @inlinable public mutating func raw(_ name: String, _ value: some Sequence<UInt8>) {
        key(name)
        bytes.append(contentsOf: value)
    }

    /// Appends bytes to the value being written (after `key`).
    @inlinable public mutating func append(_ value: some Sequence<UInt8>) {
        bytes.append(contentsOf: value)
    }

    /// The whole text, `close` (`}` or `\n}\n`) appended.
    @inlinable public consuming func closed(_ close: String) -> [UInt8] {
        bytes.append(contentsOf: close.utf8)
        return bytes
    }
}
