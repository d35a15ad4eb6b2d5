import Glibc

/// Where each member's line is in a remote batch's downloaded output and error files,
/// found by reading them once in chunks: the files stay on disk, only offsets are held
/// (a 50,000-line output costs the index, not its bodies). Each provider's lines are read
/// by its own reader, which maps the line's custom_id to the member it names.
struct LaneOutputIndex {
    /// One line read: the member it names and its outcome; throws for a line that names none.
    typealias Reader = ([UInt8]) throws -> (member: String, result: BatchLineResult)

    /// The reader of a group's lines: OpenAI's custom_ids are the member ids; Anthropic's
    /// are `<group>-<index>`, the member's place in the intent.
    static func reader(for intent: RemoteIntent) -> Reader {
        switch intent.api {
        case .openai:
            return { line in
                let read = try LaneOutputLine.read(line)
                return (read.customID, read.result)
            }
        case .anthropic:
            let group = intent.group
            let members = intent.members.map(\.id)
            return { line in try AnthropicBatchAnswers.memberLine(line, group: group, members: members) }
        }
    }

    struct Place {
        var file: Int
        var offset: Int
        var length: Int
    }

    let paths: [String]
    private let reader: Reader
    private(set) var places: [String: Place] = [:]
    /// The first lines that could not be read, with their file and line number, for the
    /// log: a file of millions of bad lines must not cost a string each.
    private(set) var problems: [String] = []
    static let problemsKept = 20
    /// Every line that could not be read, those in `problems` included.
    private(set) var unreadable = 0
    /// Lines read whose custom_id names no member of the group (given `members`), and the
    /// first of them: the provider's mistake, or a stranger's batch, said once in the log.
    private(set) var strangers = 0
    private(set) var firstStranger: String?
    /// Second and later lines of one member: only the first counts.
    private(set) var repeats = 0

    init(paths: [String], members: Set<String>? = nil, reader: @escaping Reader) throws {
        self.paths = paths
        self.reader = reader
        for (index, path) in paths.enumerated() {
            var offset = 0
            var lineNumber = 0
            try FileReader.forEachLine(path: path) { line in
                lineNumber += 1
                defer { offset += line.count + 1 }
                guard !line.isEmpty else { return }
                do {
                    let read = try reader(line)
                    if let members, !members.contains(read.member) {
                        strangers += 1
                        // The provider's text, of any length: a bounded prefix goes to the log.
                        if firstStranger == nil { firstStranger = "\(path) line \(lineNumber): custom_id \(read.member.prefix(200))" }
                        return
                    }
                    // The first line of a member counts; a repeated one is the provider's mistake.
                    if places[read.member] == nil {
                        places[read.member] = Place(file: index, offset: offset, length: line.count)
                    } else {
                        repeats += 1
                    }
                } catch {
                    unreadable += 1
                    if problems.count < Self.problemsKept { problems.append("\(path) line \(lineNumber): \(error)") }
                }
            }
        }
    }

    /// The line of `id`, read back from its file.
    func line(of id: String) throws -> [UInt8]? {
        guard let place = places[id] else { return nil }
        let file = try FileDescriptor.open(paths[place.file], O_RDONLY | O_NOFOLLOW)
        return try Syscall.preadAll(file.rawValue, count: place.length, at: place.offset, path: paths[place.file])
    }

    /// The outcome of `id`'s line, read back; nil when it has none.
    func result(of id: String) throws -> BatchLineResult? {
        try line(of: id).map { try reader($0).result }
    }
}
