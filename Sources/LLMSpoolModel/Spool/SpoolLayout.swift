/// The spool's on-disk contract: every folder and every file name that the daemon and its
/// users share is defined here and nowhere else.
///
/// | path | written by | appears when |
/// | --- | --- | --- |
/// | `outgoing/<id>.json` | the producer | it wants an answer; removed by the daemon when the task ends |
/// | `incoming/<id>.partial` | the daemon | bytes arrive (a prompt file's: the answer's text); renamed or removed when the attempt ends |
/// | `incoming/<id>.sse` | the daemon | a streamed answer completed: the raw event stream |
/// | `incoming/<id>.md` | the daemon | a prompt file's answer: its transcript, just before the result |
/// | `incoming/<id>.json` | the daemon | the task succeeded; always the last file of a success |
/// | `failed/<id>.error.json` | the daemon | the task failed: what happened |
/// | `failed/<id>.json` | the daemon | the request, moved from `outgoing` after its record is written |
/// | `state/<id>.json` | the daemon | the task's attempts and the commit point of its outcome (`TaskRecord`) |
/// | `state/<id>.name` | the daemon | the escaped original name of a request renamed to a safe id |
/// | `failed/superseded/<n>.<name>` | the daemon | an earlier failure of an id that failed again |
/// | `state/leases/<id>.lease` | the daemon | the claim of the daemon sending it, on a shared spool |
public struct SpoolLayout: Sendable, Equatable {
    public static let requestSuffix = ".json"
    public static let partialSuffix = ".partial"
    public static let rawStreamSuffix = ".sse"
    public static let errorRecordSuffix = ".error.json"
    /// Producers write under a name with this prefix and rename it into place when done.
    public static let hiddenPrefix = "."
    public static let temporarySuffix = ".tmp"

    public let root: String
    /// Files and folders the daemon creates: the owner's only, unless the group may read.
    public let fileMode: UInt32
    public let directoryMode: UInt32

    public init(root: String, groupReadable: Bool = false) {
        var trimmed = root
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.root = trimmed
        fileMode = groupReadable ? 0o640 : 0o600
        directoryMode = groupReadable ? 0o750 : 0o700
    }

    public var outgoing: String { root + "/outgoing" }
    public var incoming: String { root + "/incoming" }
    public var failed: String { root + "/failed" }
    /// The daemon's own bookkeeping; producers and consumers need not look inside.
    public var state: String { root + "/state" }
    /// Earlier failures of an id that failed again, moved aside instead of overwritten:
    /// `failed/superseded/<n>.<id>.json` and `<n>.<id>.error.json`.
    public var superseded: String { root + "/failed/superseded" }
    /// Claims of daemons sharing the spool (see `LeaseManager`).
    public var leases: String { root + "/state/leases" }
    public func lease(_ id: String) -> String { "\(leases)/\(id).lease" }
    public func takeover(_ id: String) -> String { "\(leases)/\(id).takeover" }

    public func request(_ id: String) -> String { "\(outgoing)/\(id)\(Self.requestSuffix)" }
    public func partial(_ id: String) -> String { "\(incoming)/\(id)\(Self.partialSuffix)" }
    public func rawStream(_ id: String) -> String { "\(incoming)/\(id)\(Self.rawStreamSuffix)" }
    /// A prompt file's raw events while they arrive, hidden: its `.partial` holds the text.
    public func rawEvents(_ id: String) -> String { "\(incoming)/\(Self.hiddenPrefix)\(id)\(Self.rawStreamSuffix)\(Self.temporarySuffix)" }
    public func result(_ id: String) -> String { "\(incoming)/\(id)\(Self.requestSuffix)" }
    public func failedRequest(_ id: String) -> String { "\(failed)/\(id)\(Self.requestSuffix)" }
    /// Where a failed request of any format goes: its own ending kept (`failed/<id>.md`).
    public func failedRequest(_ id: String, like requestPath: String) -> String {
        "\(failed)/\(id)\(RequestName.suffix(ofPath: requestPath))"
    }
    /// A prompt file's transcript: its conversation and the answer, as Markdown.
    public func transcript(_ id: String) -> String { "\(incoming)/\(id)\(PromptRequestFormat.transcriptSuffix)" }
    public func errorRecord(_ id: String) -> String { "\(failed)/\(id)\(Self.errorRecordSuffix)" }
    public func taskRecord(_ id: String) -> String { "\(state)/\(id)\(Self.requestSuffix)" }
    /// The original name, escaped, of a request renamed to a safe id.
    public func originalName(_ id: String) -> String { "\(state)/\(id).name" }

    /// A hidden name beside `path` to write to before renaming onto it.
    public static func temporary(for path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return hiddenPrefix + path + temporarySuffix }
        let directory = path[..<slash]
        let name = path[path.index(after: slash)...]
        return "\(directory)/\(hiddenPrefix)\(name)\(temporarySuffix)"
    }

    /// Every folder of the spool, parents first.
    public var folders: [String] { [root, outgoing, incoming, failed, state, leases] }
}
