/// The one line of an error record a person reads first: which file, whether it was sent,
/// and what went wrong, with the position of a problem in the file.
public enum FailureSummary {
    public static func line(requestName: String, kind: String, message: String, problem: RequestProblem?, attempts: Int) -> String {
        let text: String
        if let problem {
            text = "\(requestName) was not sent: \(problem.description)"
        } else {
            let tries = attempts == 1 ? "1 attempt" : "\(attempts) attempts"
            text = "\(requestName) failed after \(tries) (\(kind)): \(message)"
        }
        // One line, whatever the provider's message holds.
        return String(text.map { $0.isNewline ? " " : $0 })
    }
}
