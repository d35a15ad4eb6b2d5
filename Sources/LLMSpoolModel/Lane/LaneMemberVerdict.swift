/// What one member of an ended remote batch amounts to, from its line in the batch's output
/// or error file (nil when it has none) and the batch's last status. Pure.
public enum LaneMemberVerdict: Sendable, Equatable {
    /// The provider's answer, judged as a live attempt's response with this status.
    case response(status: Int, requestID: String?, body: [UInt8])
    /// The line failed without an HTTP answer (or the batch ended without running it for a
    /// reason other than its window): a failed attempt, retried through the live lane by
    /// the usual rules.
    case failed(message: String)
    /// The provider's window passed before the request ran: `deferred_expired` decides.
    case expired(message: String)

    /// `batch` is the remote batch's id, for the messages; `batchStatus` its last status
    /// (`expired` makes a member without a line expired: OpenAI may list only what ran).
    public static func decide(line: BatchLineResult?, batchStatus: String?, batch: String) -> LaneMemberVerdict {
        switch line {
        case .succeeded(let status, let requestID, let body)?:
            return .response(status: status, requestID: requestID, body: body)
        case .failed(_, _, let status?, let body?)?:
            return .response(status: status, requestID: nil, body: body)
        case .failed(let code, let message, _, _)?:
            return .failed(message: "the remote batch \(batch) reported \(code): \(message)")
        case .expired?:
            return .expired(message: "the remote batch \(batch) expired before this request ran (the provider's 24h window passed)")
        case .cancelled?:
            return .failed(message: "the remote batch \(batch) was cancelled before this request ran")
        case nil where batchStatus == "expired":
            return .expired(message: "the remote batch \(batch) expired before this request ran (the provider's 24h window passed)")
        case nil:
            return .failed(message: "the remote batch \(batch) ended \(batchStatus ?? "without a status") with no line for this request")
        }
    }
}
