/// A YAML document as a plain tree, each node with its 1-based line and column in the
/// text it was read from: what the libyaml wrapper hands the pure prompt-file rules.
public indirect enum YAMLNode: Sendable, Equatable {
    /// A scalar; `quoted` when it was written in quotes or as a block (`|`, `>`), which
    /// makes it a string whatever it says.
    case scalar(String, quoted: Bool, line: Int, column: Int)
    case mapping([(key: YAMLNode, value: YAMLNode)], line: Int, column: Int)
    case sequence([YAMLNode], line: Int, column: Int)

    public var line: Int {
        switch self {
        case .scalar(_, _, let line, _), .mapping(_, let line, _), .sequence(_, let line, _): line
        }
    }

    public var column: Int {
        switch self {
        case .scalar(_, _, _, let column), .mapping(_, _, let column), .sequence(_, _, let column): column
        }
    }

    /// The node moved down by `lines` lines: front matter is parsed on its own, and its
    /// positions are then made those of the whole file.
    public func shifted(by lines: Int) -> YAMLNode {
        switch self {
        case .scalar(let text, let quoted, let line, let column):
            .scalar(text, quoted: quoted, line: line + lines, column: column)
        case .mapping(let pairs, let line, let column):
            .mapping(pairs.map { (key: $0.key.shifted(by: lines), value: $0.value.shifted(by: lines)) }, line: line + lines, column: column)
        case .sequence(let items, let line, let column):
            .sequence(items.map { $0.shifted(by: lines) }, line: line + lines, column: column)
        }
    }

    /// What people call this kind of node in a message.
    public var kindName: String {
        switch self {
        case .scalar(let text, let quoted, _, _):
            switch JSONValue(yamlScalar: text, quoted: quoted) {
            case .null: "null"
            case .bool: "a boolean"
            case .integer, .number: "a number"
            default: "a string"
            }
        case .mapping: "a mapping"
        case .sequence: "a list"
        }
    }

    public static func == (lhs: YAMLNode, rhs: YAMLNode) -> Bool {
        switch (lhs, rhs) {
        case let (.scalar(a, qa, la, ca), .scalar(b, qb, lb, cb)):
            return a == b && qa == qb && la == lb && ca == cb
        case let (.sequence(a, la, ca), .sequence(b, lb, cb)):
            return a == b && la == lb && ca == cb
        case let (.mapping(a, la, ca), .mapping(b, lb, cb)):
            return la == lb && ca == cb && a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default:
            return false
        }
    }
}

/// Why front matter could not be read as YAML, at its position in the front matter's text.
public struct YAMLProblem: Error, Sendable, Equatable {
    public var message: String
    public var line: Int
    public var column: Int

    public init(_ message: String, line: Int, column: Int) {
        self.message = message
        self.line = line
        self.column = column
    }
}

/// Reads YAML text into a tree (nil for an empty document). The daemon's is libyaml's;
/// the model only declares what it needs.
public typealias YAMLReader = @Sendable ([UInt8]) -> Result<YAMLNode?, YAMLProblem>
