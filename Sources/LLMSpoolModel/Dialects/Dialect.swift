/// One request dialect (chat completions, and those to come): everything the daemon must
/// know about a kind of request and its answer, so that the intake, the engine and the
/// judge hold no dialect's rules of their own.
public protocol Dialect: Sendable {
    /// The name a summary carries (`RequestSummary.dialect`) to find the dialect again.
    var id: String { get }

    /// The `url` an envelope names this dialect by (OpenAI's Batch line `url`, such as
    /// `/v1/chat/completions`); unique among the registered dialects.
    var url: String { get }

    /// The kind of endpoint that serves this dialect.
    var api: EndpointAPI { get }

    /// Validates a request object of this dialect and says what the daemon needs before
    /// sending it. `request` is the body (a bare file's object or an envelope's `body`);
    /// `bytes` are the whole file (a byte order mark read as blanks), so that ranges and
    /// splice offsets are those of the file. The validator sets `dialect` and `body`.
    func summarise(_ request: RawJSON.Value, in bytes: [UInt8]) -> Result<RequestSummary, RequestProblem>

    /// The member, with its trailing comma, that the daemon adds right after the request
    /// object's opening brace at `RequestSummary.usageSplice` (a stream that did not ask
    /// for its usage); never used by a dialect whose summaries have no splice.
    var usageMember: [UInt8] { get }

    /// Where requests go, relative to an endpoint's base URL (which has no trailing slash).
    var path: String { get }

    /// The header lines that carry the endpoint's key, and any the dialect needs besides
    /// the content type and accept lines every request has.
    func headers(apiKey: String?) -> [String]

    /// The header lines for an endpoint that names the `anthropic-version` it speaks;
    /// dialects that send no version header have `headers(apiKey:)` do.
    func headers(apiKey: String?, anthropicVersion: String) -> [String]

    /// A fresh assembler for one streamed answer.
    func makeAssembler() -> any StreamAssembling

    /// The token counts of a plain (non-streamed) answer, already parsed.
    func usage(ofPlainAnswer answer: RawJSON.Value, in body: [UInt8]) -> [String: Int]?

    /// Why a plain 2xx answer (a JSON object without `error`) is not this dialect's
    /// object, or nil when it is.
    func plainAnswerProblem(_ answer: RawJSON.Value, in body: [UInt8]) -> String?

    /// What an error the server sent inside a 2xx stream amounts to.
    func streamFailure(message: String, body: [UInt8], status: Int) -> AttemptFailure

    /// The answer text one streamed event's data adds, or nil when it adds none: what a
    /// live view shows (`submit --wait`, a prompt file's plain-text `.partial`).
    func textDelta(ofEvent payload: [UInt8]) -> String?

    /// The answer text of a result object (plain or assembled), for a person to read; nil
    /// when the result has none (an embedding) or is not this dialect's object.
    func answerText(ofResult result: [UInt8]) -> String?
}

/// The protocol family an endpoint speaks (its config's `api`), which decides the
/// dialects it can take.
public enum EndpointAPI: String, Sendable, CaseIterable {
    case openai
    case anthropic
}

/// Folds the events of one streamed answer into the final object, on the event loop and
/// in bounded memory: the text that grows with the answer can be taken off in pieces
/// (and spilled to the result's file) as it arrives.
public protocol StreamAssembling {
    /// What precedes the first piece handed out by `takeContent()` in the result.
    var contentHead: [UInt8] { get }
    /// Bytes of text held that `takeContent()` would hand out.
    var heldContentCount: Int { get }
    mutating func consume(_ event: SSEParser.RawEvent)
    /// Whether an event's data is content, which resets the idle timer; a keep-alive sent
    /// as data (Anthropic's `ping`) is not, or a stalled stream with keep-alives never fails.
    func isContent(_ payload: UnsafeRawBufferPointer) -> Bool
    /// Hands out the text held so far, leaving none held.
    mutating func takeContent() -> [UInt8]
    /// The verdict once the stream has ended.
    func verdict() -> StreamVerdict
}

extension StreamAssembling {
    public func isContent(_ payload: UnsafeRawBufferPointer) -> Bool { true }
}

extension Dialect {
    /// An OpenAI dialect's envelope `url` is its path under `/v1`, as OpenAI's Batch lines name it.
    public var url: String { "/v1" + path }

    /// OpenAI's, unless the dialect says otherwise.
    public var api: EndpointAPI { .openai }
    public func headers(apiKey: String?, anthropicVersion: String) -> [String] {
        headers(apiKey: apiKey)
    }

    /// Any JSON object passes, unless the dialect says what its object is.
    public func plainAnswerProblem(_ answer: RawJSON.Value, in body: [UInt8]) -> String? { nil }

    /// Validates a whole request file as this dialect, with the checks every dialect shares
    /// (UTF-8, nesting, JSON, an object, a byte order mark).
    public func validate(_ bytes: [UInt8], maxDepth: Int = RequestValidator.defaultMaxDepth) -> Result<RequestSummary, RequestProblem> {
        RequestValidator.validate(bytes, maxDepth: maxDepth, dialects: [self])
    }
}
