/// The checks the dialects share on a request body: required members of a type, each
/// problem placed at the value it is about (or at the body when the member is missing).
public enum DialectFields {
    /// A problem placed at `value` in `bytes`, or left for the validator to place at the
    /// body when there is no value to point at.
    static func problem(_ kind: RequestProblem.Kind, _ message: String, at value: RawJSON.Value?,
                        in bytes: [UInt8]) -> RequestProblem {
        guard let value else { return RequestProblem(kind, message) }
        let (line, column) = RequestValidator.position(ofByte: value.range.lowerBound, in: bytes)
        return RequestProblem(kind, message, line: line, column: column)
    }

    /// The decoded `model`, which every dialect requires as a non-empty string.
    static func model(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<String, RequestProblem> {
        guard let value = request["model"] else {
            return .failure(RequestProblem(.missingField, "the request has no \"model\""))
        }
        guard case .string(let range) = value, !range.isEmpty, let model = RawJSON.string(value, in: bytes) else {
            return .failure(problem(.wrongType, "\"model\" must be a non-empty string, not \(describe(value))", at: value, in: bytes))
        }
        return .success(model)
    }

    /// What the dialects that take a model and one input member (Responses' `input`,
    /// completions' `prompt`, embeddings' `input`) open with.
    struct Prologue {
        var model: String
        var input: RawJSON.Value
    }

    /// `model`, then the member `input`, both required.
    static func prologue(_ request: RawJSON.Value, input name: String, in bytes: [UInt8]) -> Result<Prologue, RequestProblem> {
        let model: String
        switch self.model(request, in: bytes) {
        case .success(let value): model = value
        case .failure(let problem): return .failure(problem)
        }
        switch required(name, request) {
        case .success(let input): return .success(Prologue(model: model, input: input))
        case .failure(let problem): return .failure(problem)
        }
    }

    /// `stream`, then the token budget named `budget`: what a generating dialect reads
    /// after its input.
    static func streamAndBudget(_ request: RawJSON.Value, budget name: String, in bytes: [UInt8]) -> Result<(stream: Bool, budget: Int?), RequestProblem> {
        let stream: Bool
        switch self.stream(request, in: bytes) {
        case .success(let value): stream = value
        case .failure(let problem): return .failure(problem)
        }
        switch count(name, request, in: bytes) {
        case .success(let budget): return .success((stream, budget))
        case .failure(let problem): return .failure(problem)
        }
    }

    /// The member `name`, which must be present and not null.
    static func required(_ name: String, _ request: RawJSON.Value) -> Result<RawJSON.Value, RequestProblem> {
        guard let value = request[name], !value.isNull else {
            return .failure(RequestProblem(.missingField, "the request has no \"\(name)\""))
        }
        return .success(value)
    }

    /// `stream`, false when absent or null.
    static func stream(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<Bool, RequestProblem> {
        guard let value = request["stream"], !value.isNull else { return .success(false) }
        guard case .bool(let flag, _) = value else {
            return .failure(problem(.wrongType, "\"stream\" must be true or false, not \(describe(value))", at: value, in: bytes))
        }
        return .success(flag)
    }

    /// A non-negative integer member, when present; numbers past Int's range are as large
    /// as it gets. A member of another type is a problem.
    static func count(_ name: String, _ request: RawJSON.Value, in bytes: [UInt8]) -> Result<Int?, RequestProblem> {
        guard let value = request[name], !value.isNull else { return .success(nil) }
        guard case .number(let range) = value else {
            return .failure(problem(.wrongType, "\"\(name)\" must be a number, not \(describe(value))", at: value, in: bytes))
        }
        let text = String(decoding: bytes[range], as: UTF8.self)
        if let number = Int(text) { return .success(max(0, number)) }
        if text.allSatisfy(\.isNumber) { return .success(Int.max) }
        return .failure(problem(.wrongType, "\"\(name)\" must be a whole number, not \(text.prefix(40))", at: value, in: bytes))
    }

    /// Characters of every string in `value` (as written, escapes included), and one per
    /// number (a token id): what the token estimate counts of an input.
    static func characters(in value: RawJSON.Value, depth: Int = 0) -> Int {
        switch value {
        case .string(let range): range.count
        case .number: 4
        case .array(let elements, _): depth > 16 ? 0 : elements.reduce(0) { $0 + characters(in: $1, depth: depth + 1) }
        case .object(let members, _):
            depth > 16 ? 0 : members.reduce(0) { sum, member in
                // Only what the model reads: text, not the names of roles and types.
                member.key == "text" || member.key == "content" || member.key == "input" ? sum + characters(in: member.value, depth: depth + 1) : sum
            }
        case .bool, .null: 0
        }
    }

    /// A token estimate clamped so that no number a request names can overflow a sum.
    static func estimate(characters: Int, budget: Int?) -> Int {
        characters / 4 + 1 + min(budget ?? 0, 1 << 40)
    }

    static func describe(_ value: RawJSON.Value) -> String { RequestValidator.kindName(value) }
}
