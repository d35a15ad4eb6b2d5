/// How one line of a batch ended, as its output line says.
public enum BatchLineResult: Sendable, Equatable {
    /// The answer: its HTTP status, the server's request id, the result object (for a
    /// stream, the assembled one).
    case succeeded(status: Int, requestID: String?, body: [UInt8])
    /// A final failure: `code` a stable word, with the HTTP status and the provider's body
    /// when there was a response.
    case failed(code: String, message: String, status: Int?, body: [UInt8]?)
    /// The batch was cancelled before this line ended.
    case cancelled
    /// `max_lifetime_seconds` passed before the line ended.
    case expired

    /// The letter the journal keeps for it.
    public var journalCode: UInt8 {
        switch self {
        case .succeeded: UInt8(ascii: "s")
        case .failed: UInt8(ascii: "f")
        case .cancelled: UInt8(ascii: "c")
        case .expired: UInt8(ascii: "e")
        }
    }

    public var succeeded: Bool {
        if case .succeeded = self { return true }
        return false
    }
}
