/// A kind of request file in `outgoing` (JSON bodies, prompt files, those to come): which
/// names it takes and what a file of it amounts to. A new format adds its type and one
/// line in `RequestFormatRegistry.all`; intake, the engine and the finisher find it there.
public protocol RequestFormat: Sendable {
    /// The name a summary carries (`RequestSummary.format`) to find the format again.
    var id: String { get }

    /// The endings of the names it takes, such as `.json`; unique among the formats.
    var suffixes: [String] { get }

    /// Whether the body sent is made from the file (in memory, when it is sent) rather
    /// than being the file's own bytes.
    var makesBody: Bool { get }

    /// Whether the `.partial` holds the answer's plain text as it streams (the raw answer
    /// going to `SpoolLayout.rawEvents` meanwhile; a plain answer shows no `.partial`),
    /// for people watching it in an editor or with `tail -f`.
    var textPartial: Bool { get }

    /// What a file's bytes amount to.
    func prepare(_ bytes: [UInt8], context: FormatContext) -> FormatVerdict

    /// The transcript published beside the result (`incoming/<id>.md`), from the request
    /// file and the answer's text; nil for a format without one.
    func transcript(of bytes: [UInt8], answer: String, context: FormatContext) -> [UInt8]?
}

extension RequestFormat {
    public var makesBody: Bool { false }

    public var textPartial: Bool { false }

    public func transcript(of bytes: [UInt8], answer: String, context: FormatContext) -> [UInt8]? { nil }
}

/// What a format needs besides the file.
public struct FormatContext: Sendable {
    /// The config's `default_model`, for a prompt file that names no model.
    public var defaultModel: String?
    public var maxDepth: Int
    /// Reads front matter (libyaml in the daemon).
    public var yaml: YAMLReader
    public var dialects: [any Dialect]

    public init(defaultModel: String? = nil, maxDepth: Int = RequestValidator.defaultMaxDepth,
                yaml: @escaping YAMLReader, dialects: [any Dialect] = DialectRegistry.all) {
        self.defaultModel = defaultModel
        self.maxDepth = maxDepth
        self.yaml = yaml
        self.dialects = dialects
    }
}

/// What a request file amounts to.
public enum FormatVerdict: Sendable {
    /// A request to send: its summary (stamped with the format's id) and, for a format
    /// that makes its body, the bytes to send (which the summary's ranges refer to).
    case request(RequestSummary, body: [UInt8]?)
    /// Its writer marked it as not ready: left alone in `outgoing`, neither sent nor failed.
    case draft
    case invalid(RequestProblem)
}
