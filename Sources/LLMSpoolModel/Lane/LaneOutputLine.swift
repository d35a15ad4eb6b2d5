/// One line of a remote batch's output or error file, read back into the outcome of the
/// member it names: `{"id", "custom_id", "response": {"status_code", "request_id", "body"},
/// "error"}`. The body is kept as the bytes the provider sent, so the published
/// `incoming/<id>.json` is the object a live call would have produced. Pure.
public enum LaneOutputLine {
    /// Why a line cannot be read, named for the log with its line number.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The error code of a line whose batch's window passed before it ran.
    public static let expiredCode = "batch_expired"
    /// The error code of a line whose batch was cancelled before it ran.
    public static let cancelledCode = "batch_cancelled"

    public static func read(_ line: [UInt8]) throws(Problem) -> (customID: String, result: BatchLineResult) {
        let root: RawJSON.Value
        do {
            root = try BatchAnswerJSON.object(line)
        } catch {
            throw Problem(description: error.description)
        }
        guard let customID = root["custom_id"].flatMap({ RawJSON.string($0, in: line) }) else {
            throw Problem(description: "no custom_id")
        }
        let response = root["response"].flatMap { $0.isNull ? nil : $0 }
        var status: Int?
        if case .number(let range)? = response?["status_code"] { status = Int(String(decoding: line[range], as: UTF8.self)) }
        let requestID = response?["request_id"].flatMap { RawJSON.string($0, in: line) }
        let body = response?["body"].flatMap { $0.isNull ? nil : Array(line[$0.range]) }
        if let error = root["error"], !error.isNull {
            let code = error["code"].flatMap { RawJSON.string($0, in: line) } ?? "batch_error"
            let message = error["message"].flatMap { RawJSON.string($0, in: line) } ?? "the provider's batch reported an error"
            // OpenAI's words for a line its batch never ran: the window passed, or the batch was cancelled.
            if code == Self.expiredCode && response == nil { return (customID, .expired) }
            if code == Self.cancelledCode && response == nil { return (customID, .cancelled) }
            return (customID, .failed(code: code, message: message, status: status, body: body))
        }
        guard let status else { throw Problem(description: "\(customID): no response status_code and no error") }
        guard let body, (200..<300).contains(status) else {
            let message = "the endpoint answered HTTP \(status) in the batch"
            return (customID, .failed(code: "http", message: message, status: status, body: body))
        }
        guard case .object = response?["body"] else {
            return (customID, .failed(code: "invalid-answer", message: "the batch's answer is not a JSON object", status: status, body: body))
        }
        return (customID, .succeeded(status: status, requestID: requestID, body: body))
    }
}
