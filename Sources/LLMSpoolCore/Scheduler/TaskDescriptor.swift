/// A validated request, ready to upload.
public struct TaskDescriptor: Sendable, Equatable {
    public let id: String
    public let requestPath: String
    public let summary: RequestSummary

    public init(id: String, requestPath: String, summary: RequestSummary) {
        self.id = id
        self.requestPath = requestPath
        self.summary = summary
    }
}

/// What intake learned about one file in `outgoing`.
public enum Intake: Sendable, Equatable {
    case valid(TaskDescriptor)
    case invalid(id: String, requestPath: String, problem: RequestProblem)

    public var id: String {
        switch self {
        case .valid(let task): task.id
        case .invalid(let id, _, _): id
        }
    }
}
