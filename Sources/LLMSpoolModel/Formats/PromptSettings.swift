/// The front matter of a prompt file, checked: every key it may hold, with its type.
public struct PromptSettings: Sendable, Equatable {
    /// Which dialect a prompt file's body is made for.
    public enum API: String, Sendable, CaseIterable {
        case chat
        case responses
        case messages

        /// The envelope url of the dialect, as `DialectRegistry.dialect(url:)` knows it.
        public var url: String {
            switch self {
            case .chat: "/v1/chat/completions"
            case .responses: "/v1/responses"
            case .messages: "/v1/messages"
            }
        }
    }

    public var model: String?
    public var system: String?
    public var temperature: JSONValue?
    public var maxTokens: Int?
    public var stream = true
    public var endpoint: String?
    public var api = API.chat
    /// Members passed into the body as they are, in the order written.
    public var params: [(key: String, value: JSONValue, line: Int, column: Int)] = []
    public var draft = false

    /// The keys front matter may hold; anything else is a typo to report.
    public static let keys = ["model", "system", "temperature", "max_tokens", "stream", "endpoint", "api", "params", "draft"]

    public init() {}

    public static func == (lhs: PromptSettings, rhs: PromptSettings) -> Bool {
        lhs.model == rhs.model && lhs.system == rhs.system && lhs.temperature == rhs.temperature && lhs.maxTokens == rhs.maxTokens
            && lhs.stream == rhs.stream && lhs.endpoint == rhs.endpoint && lhs.api == rhs.api && lhs.draft == rhs.draft
            && lhs.params.count == rhs.params.count
            && zip(lhs.params, rhs.params).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    /// Reads settings from a front matter tree (nil: none, or an empty document).
    public static func read(_ tree: YAMLNode?) -> Result<PromptSettings, RequestProblem> {
        var settings = PromptSettings()
        guard let tree else { return .success(settings) }
        guard case .mapping(let pairs, _, _) = tree else {
            return .failure(problem("the front matter must be a mapping of settings (such as \"model: gpt-4o-mini\"), not \(tree.kindName)", at: tree))
        }
        var seen = Set<String>()
        for (keyNode, value) in pairs {
            guard case .scalar(let key, _, _, _) = keyNode else {
                return .failure(problem("a front matter key must be a plain name, not \(keyNode.kindName)", at: keyNode))
            }
            guard keys.contains(key) else {
                return .failure(problem("unknown front matter key \"\(RequestEnvelope.shown(key))\" (the keys are \(keys.joined(separator: ", ")); "
                    + "anything else for the body goes under params)", at: keyNode))
            }
            guard seen.insert(key).inserted else {
                return .failure(problem("the front matter sets \"\(key)\" twice", at: keyNode))
            }
            switch key {
            case "model":
                guard let text = string(value), !text.isEmpty else { return .failure(typeProblem(key, "a non-empty string", value)) }
                settings.model = text
            case "system":
                guard let text = string(value) else { return .failure(typeProblem(key, "a string", value)) }
                settings.system = text
            case "endpoint":
                guard let text = string(value), !text.isEmpty else { return .failure(typeProblem(key, "an endpoint's name", value)) }
                settings.endpoint = text
            case "temperature":
                guard case .scalar(let text, let quoted, _, _) = value else { return .failure(typeProblem(key, "a number", value)) }
                let number = JSONValue(yamlScalar: text, quoted: quoted)
                switch number {
                case .integer, .number: settings.temperature = number
                default: return .failure(typeProblem(key, "a number", value))
                }
            case "max_tokens":
                guard case .scalar(let text, let quoted, _, _) = value, case .integer(let count) = JSONValue(yamlScalar: text, quoted: quoted),
                      count > 0 else { return .failure(typeProblem(key, "a whole number above 0", value)) }
                settings.maxTokens = count
            case "stream", "draft":
                guard case .scalar(let text, let quoted, _, _) = value, case .bool(let flag) = JSONValue(yamlScalar: text, quoted: quoted) else {
                    return .failure(typeProblem(key, "true or false", value))
                }
                if key == "stream" { settings.stream = flag } else { settings.draft = flag }
            case "api":
                guard let text = string(value), let api = API(rawValue: text) else {
                    return .failure(typeProblem(key, "one of \(API.allCases.map(\.rawValue).joined(separator: ", "))", value))
                }
                settings.api = api
            default:  // params
                guard case .mapping(let members, _, _) = value else { return .failure(typeProblem(key, "a mapping", value)) }
                var names = Set<String>()
                for (nameNode, member) in members {
                    guard case .scalar(let name, _, _, _) = nameNode else {
                        return .failure(problem("a key under params must be a plain name, not \(nameNode.kindName)", at: nameNode))
                    }
                    guard names.insert(name).inserted else { return .failure(problem("params sets \"\(RequestEnvelope.shown(name))\" twice", at: nameNode)) }
                    switch json(member) {
                    case .success(let converted): settings.params.append((name, converted, nameNode.line, nameNode.column))
                    case .failure(let failure): return .failure(failure)
                    }
                }
            }
        }
        return .success(settings)
    }

    /// A tree as the JSON it means: mappings with string keys become objects.
    public static func json(_ node: YAMLNode) -> Result<JSONValue, RequestProblem> {
        switch node {
        case .scalar(let text, let quoted, _, _):
            return .success(JSONValue(yamlScalar: text, quoted: quoted))
        case .sequence(let items, _, _):
            var values: [JSONValue] = []
            for item in items {
                switch json(item) {
                case .success(let value): values.append(value)
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(.array(values))
        case .mapping(let pairs, _, _):
            var members: [(String, JSONValue)] = []
            var names = Set<String>()
            for (keyNode, value) in pairs {
                guard case .scalar(let name, _, _, _) = keyNode else {
                    return .failure(problem("a key under params must be a plain name, not \(keyNode.kindName)", at: keyNode))
                }
                guard names.insert(name).inserted else { return .failure(problem("the key \"\(RequestEnvelope.shown(name))\" appears twice", at: keyNode)) }
                switch json(value) {
                case .success(let converted): members.append((name, converted))
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(.object(members))
        }
    }

    static func string(_ node: YAMLNode) -> String? {
        guard case .scalar(let text, let quoted, _, _) = node else { return nil }
        if quoted { return text }
        // A plain `model: 4` or `model: true` is not a string a person meant to quote.
        guard case .string = JSONValue(yamlScalar: text, quoted: false) else { return nil }
        return text
    }

    static func problem(_ message: String, at node: YAMLNode) -> RequestProblem {
        RequestProblem(.invalidFrontMatter, message, line: node.line, column: node.column)
    }

    static func typeProblem(_ key: String, _ expected: String, _ node: YAMLNode) -> RequestProblem {
        RequestProblem(.invalidFrontMatter, "\"\(key)\" must be \(expected), not \(node.kindName)", line: node.line, column: node.column)
    }
}
