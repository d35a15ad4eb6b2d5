/// Why a file in `outgoing` cannot be sent. `kind` is stable for programs; `message` is
/// for people and names the first problem found.
public struct RequestProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case unusableName = "unusable-name"
        case notRegularFile = "not-a-regular-file"
        case hardLink = "hard-link"
        case tooDeep = "too-deep"
        case unreadable
        /// The machine could not read it now (no descriptors, no memory): not the file's fault.
        case transient
        case tooLarge = "too-large"
        case notUTF8 = "not-utf8"
        case invalidJSON = "invalid-json"
        case notAnObject = "not-an-object"
        case missingField = "missing-field"
        case wrongType = "wrong-type"
        /// A member the shape does not have (an envelope's typo).
        case unknownMember = "unknown-member"
        /// A value of the right type that the daemon does not serve (a url, a method).
        case unsupported
        /// A prompt file's front matter is not YAML, or not the settings it may hold.
        case invalidFrontMatter = "invalid-front-matter"
        /// A prompt file's text is not a conversation (an empty prompt, an empty section,
        /// text before the first role heading).
        case invalidPrompt = "invalid-prompt"
    }

    public let kind: Kind
    public let message: String
    /// 1-based position of the problem in the file, when it has one.
    public let line: Int?
    public let column: Int?

    public init(_ kind: Kind, _ message: String, line: Int? = nil, column: Int? = nil) {
        self.kind = kind
        self.message = message
        self.line = line
        self.column = column
    }

    public var description: String {
        if let line, let column { return "\(message) (line \(line), column \(column))" }
        return message
    }
}
