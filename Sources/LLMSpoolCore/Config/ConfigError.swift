/// A configuration that cannot be used; the message names the file and the setting.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
