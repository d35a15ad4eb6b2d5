/// The intent record of one group sent through a provider's Batch API,
/// `state/remote/<group>.json`. It is written durably before anything remote exists and
/// again at each step of the remote batch's life, so that a daemon that restarts knows
/// which remote objects are its own and never creates a second batch for one group.
public struct RemoteIntent: Sendable, Equatable {
    /// One request of the group.
    public struct Member: Sendable, Equatable {
        public var id: String
        /// The request file as it was when the group was formed: a new file under the same
        /// name is another request, and the group's answer is not its answer.
        public var request: FileIdentity?

        public init(id: String, request: FileIdentity?) {
            self.id = id
            self.request = request
        }
    }

    public var group: String
    public var state: RemoteBatchState
    /// The endpoint's name in the config.
    public var endpoint: String
    /// Whose Batch API carries the group, which decides its flow (OpenAI uploads a file
    /// first; Anthropic creates at once). A record without one is OpenAI's.
    public var api: EndpointAPI
    /// The dialect's url, the batch's `endpoint` at the provider.
    public var url: String
    /// When the intent was recorded, seconds since 1970: reconciling looks no further back.
    public var createdAt: Int
    public var members: [Member]
    public var inputFileID: String?
    public var batchID: String?
    public var outputFileID: String?
    public var errorFileID: String?
    /// The provider's last status and counts.
    public var remoteStatus: String?

    public init(group: String, state: RemoteBatchState = .intent, endpoint: String, api: EndpointAPI = .openai, url: String, createdAt: Int,
                members: [Member], inputFileID: String? = nil, batchID: String? = nil, outputFileID: String? = nil,
                errorFileID: String? = nil, remoteStatus: String? = nil) {
        self.group = group
        self.state = state
        self.endpoint = endpoint
        self.api = api
        self.url = url
        self.createdAt = createdAt
        self.members = members
        self.inputFileID = inputFileID
        self.batchID = batchID
        self.outputFileID = outputFileID
        self.errorFileID = errorFileID
        self.remoteStatus = remoteStatus
    }

    /// Whether `group` can be a file name in `state/remote` and a metadata value: letters,
    /// digits, `-` and `_`, at most 64 (OpenAI's limit for a metadata value is 512).
    public static func isValidGroup(_ group: String) -> Bool {
        !group.isEmpty && group.utf8.count <= 64
            && group.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F }
    }

    /// The whole record (tests, and records small enough to hold): `encode` in one piece.
    public func encoded() -> [UInt8] {
        var whole: [UInt8] = []
        encode(chunkBytes: Int.max) { (chunk: [UInt8]) -> Void in whole += chunk }
        return whole
    }

    /// Hands the record to `emit` in pieces of about `chunkBytes`, in order, so that a group
    /// of 50,000 members is written as it is encoded instead of being built whole (it is
    /// written at each of the group's changes of state).
    ///
    /// The request files' identities come first, once each (`request_files`), and each
    /// member names its own by place (`request_file`): the lines of one batch file share
    /// their file, so its identity is written once, not once per line. A member whose
    /// identity is the one before it shares that entry; the decoder also reads the older
    /// form, an identity inline in each member (`request`).
    public func encode<Failure: Error>(chunkBytes: Int = 64 << 10, _ emit: ([UInt8]) throws(Failure) -> Void) throws(Failure) {
        var out: [UInt8] = []
        out.reserveCapacity(min(chunkBytes, 1 << 20) + 1024)
        func string(_ value: String?) -> [UInt8] { value.map(JSONWriter.quoted) ?? JSONWriter.null }
        func flushIfFull() throws(Failure) {
            guard out.count >= chunkBytes else { return }
            try emit(out)
            out.removeAll(keepingCapacity: true)
        }
        let head = JSONWriter.object([
            ("group", JSONWriter.quoted(group)),
            ("state", JSONWriter.quoted(state.rawValue)),
            ("endpoint", JSONWriter.quoted(endpoint)),
            ("api", JSONWriter.quoted(api.rawValue)),
            ("url", JSONWriter.quoted(url)),
            ("created_at", JSONWriter.number(createdAt)),
            ("input_file_id", string(inputFileID)),
            ("batch_id", string(batchID)),
            ("output_file_id", string(outputFileID)),
            ("error_file_id", string(errorFileID)),
            ("remote_status", string(remoteStatus)),
        ])
        // The head's closing brace gives way to the two lists.
        out += head.dropLast()
        out += Array(",\n\"request_files\":[".utf8)
        var files = 0
        var previous: FileIdentity?
        for member in members {
            guard let identity = member.request, identity != previous else { continue }
            previous = identity
            out += files > 0 ? [0x2C, 0x0A] : [0x0A]
            Self.append(identity, to: &out)
            files += 1
            try flushIfFull()
        }
        out += Array("\n],\n\"members\":[".utf8)
        files = -1
        previous = nil
        for (index, member) in members.enumerated() {
            out += index > 0 ? [0x2C, 0x0A] : [0x0A]
            out += Array("{\"id\":".utf8)
            out += JSONWriter.quoted(member.id)
            if let identity = member.request {
                if identity != previous {
                    previous = identity
                    files += 1
                }
                out += Array(",\"request_file\":".utf8)
                out += Array(String(files).utf8)
            }
            out.append(0x7D)
            try flushIfFull()
        }
        out += Array("\n]}\n".utf8)
        try emit(out)
    }

    private static func append(_ identity: FileIdentity, to out: inout [UInt8]) {
        var fields: [(String, [UInt8])] = [("device", Array(String(identity.device).utf8)),
                                           ("inode", Array(String(identity.inode).utf8)),
                                           ("size", Array(String(identity.size).utf8)),
                                           ("mtime_ns", Array(String(identity.modifiedNanoseconds).utf8))]
        if let born = identity.bornNanoseconds { fields.append(("btime_ns", Array(String(born).utf8))) }
        if let hash = identity.contentHash { fields.append(("fnv1a", JSONWriter.quoted(String(hash, radix: 16)))) }
        out += JSONWriter.object(fields)
    }

    /// Why a record cannot be read, for the log line that names its file.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public static func decode(_ bytes: [UInt8]) throws(Problem) -> RemoteIntent {
        let root: RawJSON.Value
        do {
            root = try RawJSON.parse(bytes)
        } catch {
            throw Problem(description: "not JSON: \(error)")
        }
        func string(_ key: String, in value: RawJSON.Value) -> String? {
            value[key].flatMap { RawJSON.string($0, in: bytes) }
        }
        func integer<T: FixedWidthInteger>(_ key: String, in value: RawJSON.Value, as: T.Type) -> T? {
            guard case .number(let range)? = value[key] else { return nil }
            // A number from a file: read only when it fits, never trapped on.
            return T(String(decoding: bytes[range], as: UTF8.self))
        }
        guard case .object = root else { throw Problem(description: "not a JSON object") }
        guard let group = string("group", in: root), isValidGroup(group) else { throw Problem(description: "no valid group") }
        guard let state = string("state", in: root).flatMap(RemoteBatchState.init(rawValue:)) else {
            throw Problem(description: "no known state")
        }
        guard let endpoint = string("endpoint", in: root), let url = string("url", in: root) else {
            throw Problem(description: "no endpoint or url")
        }
        var api = EndpointAPI.openai
        if let named = string("api", in: root) {
            guard let known = EndpointAPI(rawValue: named) else { throw Problem(description: "an unknown api \"\(TextEscaping.trimmed(named.prefix(40)))\"") }
            api = known
        }
        guard let createdAt = integer("created_at", in: root, as: Int.self) else { throw Problem(description: "no created_at") }
        func identity(_ value: RawJSON.Value) -> FileIdentity? {
            guard let device = integer("device", in: value, as: UInt64.self),
                  let inode = integer("inode", in: value, as: UInt64.self),
                  let size = integer("size", in: value, as: Int64.self),
                  let modified = integer("mtime_ns", in: value, as: Int64.self) else { return nil }
            return FileIdentity(device: device, inode: inode, size: size, modifiedNanoseconds: modified,
                                bornNanoseconds: integer("btime_ns", in: value, as: Int64.self),
                                contentHash: string("fnv1a", in: value).flatMap { UInt64($0, radix: 16) })
        }
        // Records written before `request_files` have none: each member carries its identity.
        var files: [FileIdentity] = []
        if let table = root["request_files"] {
            guard case .array(let entries, _) = table else { throw Problem(description: "request_files is not a list") }
            files.reserveCapacity(entries.count)
            for (index, entry) in entries.enumerated() {
                guard let read = identity(entry) else { throw Problem(description: "request file \(index) is a broken identity") }
                files.append(read)
            }
        }
        guard case .array(let list, _)? = root["members"] else { throw Problem(description: "no members") }
        var members: [Member] = []
        members.reserveCapacity(list.count)
        for (index, item) in list.enumerated() {
            guard let id = string("id", in: item) else { throw Problem(description: "member \(index) has no id") }
            var found: FileIdentity?
            if let place = item["request_file"] {
                guard case .number = place, let at = integer("request_file", in: item, as: Int.self), files.indices.contains(at) else {
                    throw Problem(description: "member \(id) names a request file the record does not list")
                }
                found = files[at]
            } else if let request = item["request"] {
                guard let read = identity(request) else { throw Problem(description: "member \(id) has a broken request identity") }
                found = read
            }
            members.append(Member(id: id, request: found))
        }
        return RemoteIntent(group: group, state: state, endpoint: endpoint, api: api, url: url, createdAt: createdAt, members: members,
                            inputFileID: string("input_file_id", in: root), batchID: string("batch_id", in: root),
                            outputFileID: string("output_file_id", in: root), errorFileID: string("error_file_id", in: root),
                            remoteStatus: string("remote_status", in: root))
    }
}
