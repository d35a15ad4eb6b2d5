/// What a result file carries in its extended attribute `user.llmspool.request`: the
/// request it answers, so that the result alone proves the end of that request (the
/// commit point of the one-fsync order, `PublicationPlan.CommitOrder.resultMarked`).
///
/// The value is lines of text: a version, the request's identity (device, inode, size,
/// modification time, birth time and fingerprint, `-` for an unknown one), the dialect, and
/// last the id, which takes the rest of the value verbatim (a name may hold a newline).
public struct ResultMark: Sendable, Equatable {
    /// The attribute's name.
    public static let attribute = "user.llmspool.request"
    /// Largest value read back: an id is a file name (at most 255 bytes) plus a few numbers.
    public static let maximumSize = 1024
    static let version = "llmspool-result-mark 1"

    public var id: String
    public var request: FileIdentity
    public var dialect: String?

    public init(id: String, request: FileIdentity, dialect: String? = nil) {
        self.id = id
        self.request = request
        self.dialect = dialect
    }

    /// The attribute's value.
    public func encoded() -> [UInt8] {
        let fields = [Self.version, "\(request.device)", "\(request.inode)", "\(request.size)", "\(request.modifiedNanoseconds)",
                      request.bornNanoseconds.map { "\($0)" } ?? "-", request.contentHash.map { "\($0)" } ?? "-",
                      dialect.map(Self.escapeDialect) ?? "-", id]
        return Array(fields.joined(separator: "\n").utf8)
    }

    /// The mark a value encodes, or why it is none: a value that is not a mark proves nothing.
    public static func parse(_ bytes: [UInt8]) -> Result<ResultMark, ResultMarkProblem> {
        guard bytes.count <= maximumSize else { return .failure(.tooLong(bytes.count)) }
        var fields: [String] = []
        var rest = bytes[...]
        while fields.count < 8 {
            guard let newline = rest.firstIndex(of: 0x0A) else { return .failure(.missingField(fields.count)) }
            fields.append(String(decoding: rest[..<newline], as: UTF8.self))
            rest = rest[rest.index(after: newline)...]
        }
        guard fields[0] == version else { return .failure(.unknownVersion(fields[0])) }
        guard let id = String(validating: rest, as: UTF8.self), !id.isEmpty else { return .failure(.badID) }
        guard let device = UInt64(fields[1]) else { return .failure(.badNumber(field: "device", fields[1])) }
        guard let inode = UInt64(fields[2]) else { return .failure(.badNumber(field: "inode", fields[2])) }
        guard let size = Int64(fields[3]), size >= 0 else { return .failure(.badNumber(field: "size", fields[3])) }
        guard let modified = Int64(fields[4]) else { return .failure(.badNumber(field: "modified", fields[4])) }
        let born: Int64?
        if fields[5] == "-" { born = nil } else if let value = Int64(fields[5]) { born = value } else {
            return .failure(.badNumber(field: "born", fields[5]))
        }
        let hash: UInt64?
        if fields[6] == "-" { hash = nil } else if let value = UInt64(fields[6]) { hash = value } else {
            return .failure(.badNumber(field: "fingerprint", fields[6]))
        }
        let dialect = fields[7] == "-" ? nil : fields[7]
        return .success(ResultMark(id: id, request: FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modified,
                                                                   bornNanoseconds: born, contentHash: hash),
                                   dialect: dialect))
    }

    /// Whether the mark proves that its result answers the request `identity` of `id`:
    /// the same id and the same instance of the file, by every field both know.
    public func proves(id: String, identity: FileIdentity) -> Bool {
        self.id == id && request.isSameInstance(as: identity)
    }

    /// A dialect id is a short word; a newline in one would shift every field after it.
    static func escapeDialect(_ dialect: String) -> String {
        dialect.contains("\n") || dialect.isEmpty ? "-" : dialect
    }
}

/// Why an attribute's value is not a result mark.
public enum ResultMarkProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLong(Int)
    case missingField(Int)
    case unknownVersion(String)
    case badNumber(field: String, String)
    case badID

    public var description: String {
        switch self {
        case .tooLong(let count): "the mark is \(count) bytes, more than \(ResultMark.maximumSize)"
        case .missingField(let count): "the mark ends after \(count) of its 9 fields"
        case .unknownVersion(let text): "the mark's first line is not \"\(ResultMark.version)\": \"\(text.prefix(40))\""
        case .badNumber(let field, let text): "the mark's \(field) is not a number: \"\(text.prefix(40))\""
        case .badID: "the mark's id is empty or not UTF-8"
        }
    }
}
