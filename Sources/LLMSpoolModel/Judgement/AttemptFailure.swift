import FoundationEssentials

/// Why an attempt did not produce a result.
public struct AttemptFailure: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case transport
        case http
        case providerError = "provider-error"
        case incompleteStream = "incomplete-stream"
        case malformedResponse = "malformed-response"
        case disk
        case invalidRequest = "invalid-request"
        case responseTooLarge = "response-too-large"
        case crashLoop = "crash-loop"
        /// No configured endpoint speaks the request's dialect.
        case noEndpoint = "no-endpoint"
        /// A request that waited in a remote batch whose window passed before it ran.
        case expired
    }

    /// Which timer ended the attempt.
    public enum Timer: String, Sendable {
        case connect, idle, total
    }

    public let kind: Kind
    public let message: String
    public var httpStatus: Int?
    /// The provider's error body, as it sent it (bounded).
    public var providerBody: [UInt8]?
    public var curlCode: Int32?
    public var timer: Timer?
    /// The status code carried inside an error event of a 200 stream, if any.
    public var embeddedCode: Int?

    public init(_ kind: Kind, _ message: String, httpStatus: Int? = nil, providerBody: [UInt8]? = nil,
                curlCode: Int32? = nil, timer: Timer? = nil, embeddedCode: Int? = nil) {
        self.kind = kind
        self.message = message
        self.httpStatus = httpStatus
        self.providerBody = providerBody
        self.curlCode = curlCode
        self.timer = timer
        self.embeddedCode = embeddedCode
    }
}
