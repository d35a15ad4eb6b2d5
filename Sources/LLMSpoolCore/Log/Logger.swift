import Foundation
import Glibc

/// One line per event to stderr, in text or JSON; values are escaped so that no file name
/// can forge a line or smuggle control characters into a terminal.
public final class Logger: Sendable {
    /// How important a line is.
    public enum Level: Int, Comparable, Sendable, CaseIterable {
        case debug, info, warning, error

        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    /// The shape of a line.
    public enum Format: String, Sendable {
        case text, json
    }

    public let minimum: Level
    public let format: Format
    /// Off under journald (`JOURNAL_STREAM` set), which stamps every line itself.
    public let timestamps: Bool
    private let sink: @Sendable (String) -> Void

    public init(minimum: Level = .info, format: Format = .text, timestamps: Bool = false, sink: (@Sendable (String) -> Void)? = nil) {
        self.minimum = minimum
        self.format = format
        self.timestamps = timestamps
        self.sink = sink ?? { line in
            var bytes = Array(line.utf8)
            bytes.append(0x0A)
            // One write per line keeps lines from different threads whole.
            bytes.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
        }
    }

    public func log(_ level: Level, _ message: String, id: String? = nil, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(level, message, id: id, fields.map { ($0.key, $0.value) })
    }

    /// The same, with fields built at run time.
    public func log(_ level: Level, _ message: String, id: String? = nil, _ fields: [(String, String)]) {
        log(level, message, id: id, fields.map { ($0.0, LogValue($0.1)) })
    }

    /// The same, with typed fields built at run time.
    public func log(_ level: Level, _ message: String, id: String? = nil, _ fields: [(String, LogValue)]) {
        guard level >= minimum else { return }
        var pairs: [(String, LogValue)] = []
        if let id { pairs.append(("id", LogValue(id))) }
        pairs.append(contentsOf: fields)
        sink(render(level, message, pairs))
    }

    public func debug(_ message: String, id: String? = nil, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.debug, message, id: id, fields) }
    public func info(_ message: String, id: String? = nil, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.info, message, id: id, fields) }
    public func warning(_ message: String, id: String? = nil, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.warning, message, id: id, fields) }
    public func error(_ message: String, id: String? = nil, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.error, message, id: id, fields) }

    func render(_ level: Level, _ message: String, _ pairs: [(String, LogValue)]) -> String {
        switch format {
        case .text:
            var line = "\(level.name): \(Logger.escape(message))"
            if timestamps { line = Timestamp.string(Date()) + " " + line }
            for (key, value) in pairs {
                line += " \(key)=\(Logger.quoteIfNeeded(Logger.escape(value.text)))"
            }
            return line
        case .json:
            var object: [String: Any] = ["level": level.name, "msg": message]
            if timestamps { object["time"] = Timestamp.string(Date()) }
            for (key, value) in pairs {
                switch value.typed {
                case .string(let text): object[key] = text
                case .integer(let number): object[key] = number
                case .number(let number): object[key] = number
                case .bool(let flag): object[key] = flag
                }
            }
            // Strings, numbers and booleans always serialize; a logger has nowhere else to report.
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// Escapes control characters, backslashes and invalid UTF-8 as `\xNN`.
    public static func escape(_ text: String) -> String { TextEscaping.escape(text) }

    static func quoteIfNeeded(_ text: String) -> String {
        if text.isEmpty || text.contains(" ") || text.contains("\"") || text.contains("=") {
            return "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        return text
    }
}
