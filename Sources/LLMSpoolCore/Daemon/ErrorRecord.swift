import Foundation

/// The contents of `failed/<id>.error.json`: what went wrong, when, after how many attempts.
/// It never holds request headers, so the API key cannot reach it.
struct ErrorRecord {
    let id: String
    let failure: AttemptFailure
    let attempt: AttemptOutcome?
    let problem: RequestProblem?
    let requestFile: String

    func encoded() -> [UInt8] {
        let now = ErrorRecord.timestamp(Date())
        var object: [String: Any] = [
            "id": id,
            "status": "failed",
            "kind": failure.kind.rawValue,
            "message": failure.message,
            "failed_at": now,
            "request": requestFile,
            "attempts": attempt == nil ? 0 : 1,
        ]
        if let status = failure.httpStatus { object["http_status"] = status }
        if let body = failure.providerBody { object["provider_error"] = JSONObject.embeddable(body) }
        if let problem {
            var detail: [String: Any] = ["kind": problem.kind.rawValue, "message": problem.message]
            if let line = problem.line, let column = problem.column {
                detail["line"] = line
                detail["column"] = column
            }
            object["problem"] = detail
        }
        if let attempt {
            var entry: [String: Any] = [
                "started_at": ErrorRecord.timestamp(attempt.startedAt),
                "ended_at": ErrorRecord.timestamp(attempt.endedAt),
                "endpoint": attempt.endpoint,
                "kind": failure.kind.rawValue,
                "message": failure.message,
                "bytes_sent": attempt.bytesSent,
                "bytes_received": attempt.bytesReceived,
            ]
            if let status = failure.httpStatus { entry["http_status"] = status }
            object["attempt_log"] = [entry]
        }
        return JSONObject.encode(object)
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
