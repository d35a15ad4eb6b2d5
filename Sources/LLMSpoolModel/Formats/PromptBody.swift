/// The request body a prompt file amounts to, in the dialect its `api` names.
public enum PromptBody {
    /// What Anthropic's Messages API requires and a prompt file may leave out.
    public static let defaultMessagesMaxTokens = 4096

    /// The body and the envelope url of its dialect. `defaultModel` is the config's
    /// `default_model`, used when the front matter names none.
    public static func make(_ file: PromptFile, defaultModel: String?) -> Result<(url: String, body: JSONValue), RequestProblem> {
        let settings = file.settings
        guard let model = settings.model ?? defaultModel.flatMap({ $0.isEmpty ? nil : $0 }) else {
            return .failure(RequestProblem(.missingField, "the prompt file names no model and the configuration has no default_model: "
                + "add \"model: NAME\" to its front matter, or set \"default_model\" in the config", line: 1, column: 1))
        }
        var members: [(String, JSONValue)] = [("model", .string(model))]
        let systems = (settings.system.map { [$0] } ?? []) + file.messages.filter { $0.role == .system }.map(\.text)
        let turns = { (messages: [PromptFile.Message]) in
            JSONValue.array(messages.map { .object([("role", .string($0.role.rawValue)), ("content", .string($0.text))]) })
        }
        let withSystem = (settings.system.map { [PromptFile.Message(role: .system, text: $0, line: 1)] } ?? []) + file.messages
        var budgetKey = "max_tokens"
        switch settings.api {
        case .chat:
            members.append(("messages", turns(withSystem)))
        case .responses:
            if let system = settings.system { members.append(("instructions", .string(system))) }
            members.append(("input", turns(file.messages)))
            budgetKey = "max_output_tokens"
        case .messages:
            if !systems.isEmpty { members.append(("system", .string(systems.joined(separator: "\n\n")))) }
            members.append(("messages", turns(file.messages.filter { $0.role != .system })))
        }
        members.append(("stream", .bool(settings.stream)))
        if let temperature = settings.temperature { members.append(("temperature", temperature)) }
        if let budget = settings.maxTokens {
            members.append((budgetKey, .integer(budget)))
        } else if settings.api == .messages && !settings.params.contains(where: { $0.key == budgetKey }) {
            members.append((budgetKey, .integer(defaultMessagesMaxTokens)))
        }
        // A set, not a search of the members per key: 45,000 keys under params took minutes,
        // on the watcher and again at every attempt's start (duplicates are refused earlier,
        // in `PromptSettings`).
        let ownKeys = Set(members.map(\.0))
        for param in settings.params {
            if ownKeys.contains(param.key) {
                return .failure(RequestProblem(.invalidFrontMatter, "params must not set \"\(RequestEnvelope.shown(param.key))\": the prompt file sets it "
                    + "(use the front matter key, or the file's text for the messages)", line: param.line, column: param.column))
            }
            members.append((param.key, param.value))
        }
        return .success((settings.api.url, .object(members)))
    }
}
