import Foundation

/// The contents of `failed/<id>.error.json`: what went wrong, when, and every attempt.
/// It never holds request headers, so the API key cannot reach it.
enum ErrorRecord {
    static func encode(id: String, failure: AttemptFailure, history: TaskHistory, problem: RequestProblem?, requestFile: String,
                       originalName: String? = nil) -> [UInt8] {
        var object: [String: Any] = [
            "id": id,
            "status": "failed",
            "kind": failure.kind.rawValue,
            "message": failure.message,
            "failed_at": Timestamp.string(Date()),
            "first_seen": Timestamp.string(history.firstSeen),
            "request": requestFile,
            "attempts": history.attempts.count,
            "attempt_log": history.attempts.map(TaskRecord.encode),
        ]
        let name = requestFile.split(separator: "/").last.map(String.init) ?? requestFile
        object["summary"] = FailureSummary.line(requestName: originalName ?? name, kind: failure.kind.rawValue, message: failure.message,
                                                problem: problem, attempts: history.attempts.count)
        if let originalName { object["original_name"] = originalName }
        if let status = failure.httpStatus { object["http_status"] = status }
        if let timer = failure.timer { object["timer"] = timer.rawValue }
        if let body = failure.providerBody { object["provider_error"] = JSONObject.embeddable(body) }
        if let problem {
            var detail: [String: Any] = ["kind": problem.kind.rawValue, "message": problem.message]
            if let line = problem.line, let column = problem.column {
                detail["line"] = line
                detail["column"] = column
            }
            object["problem"] = detail
        }
        return JSONObject.encode(object)
    }
}
