/// Folds the typed events of a Responses stream into its result: the `response` of the
/// terminal event, copied as the server wrote it. `response.completed` is a success and
/// `response.incomplete` a result that says why it stopped (its `incomplete_details`);
/// `response.failed` and `error` events are failures. There is no `[DONE]`: a stream that
/// ends before a terminal event is incomplete. Pure and bounded: the text deltas are not
/// kept (the terminal event repeats them), and the terminal `response`, which holds the
/// whole answer, can be taken off with `takeContent()` as soon as it arrives.
public struct ResponsesAssembler: StreamAssembling {
    /// The terminal `response`, whole: nothing precedes it in the result.
    public var contentHead: [UInt8] { [] }

    public private(set) var eventCount = 0
    /// The terminal event's type, once it has come.
    public private(set) var terminal: String?
    private var response: [UInt8] = []
    private var taken = 0
    private var usage: [String: Int]?
    private var providerError: (message: String, body: [UInt8])?
    private var malformed: String?
    /// The highest `sequence_number` seen, for the message of a stream that stopped.
    private var lastSequence: Int?

    public init() {}

    public var heldContentCount: Int { response.count }

    public mutating func takeContent() -> [UInt8] {
        let bytes = response
        taken += bytes.count
        response = []
        return bytes
    }

    public mutating func consume(_ event: SSEParser.RawEvent) {
        guard case .data(let payload) = event else { return }
        guard terminal == nil, providerError == nil, malformed == nil else { return }
        eventCount += 1
        let object: RawJSON.Value
        switch ChunkStream.object(payload, event: eventCount) {
        case .success(let value): object = value
        case .failure(let problem):
            malformed = problem.message
            return
        }
        if let sequence = StreamAssembler.integer(object["sequence_number"], payload) { lastSequence = sequence }
        let type = object["type"].flatMap { StreamAssembler.escaped($0, payload) }.map { String(decoding: $0, as: UTF8.self) }
        let body = Array(payload)
        switch type {
        case "error"?:
            let message = object["message"].flatMap { RawJSON.string($0, in: body) }
                ?? ProviderError.message(inBody: body) ?? "the stream carried an error event"
            providerError = (message, body)
        case "response.failed"?:
            let message = object["response"]?["error"]?["message"].flatMap { RawJSON.string($0, in: body) }
                ?? "the response failed"
            providerError = (message, body)
        case "response.completed"?, "response.incomplete"?:
            guard let value = object["response"], case .object = value else {
                malformed = "the \(type!) event (event \(eventCount)) carries no response object"
                return
            }
            // A terminal event whose response says it failed (or was cancelled) is that
            // failure, whatever the event's type: published, it read as a success.
            if let status = value["status"].flatMap({ RawJSON.string($0, in: body) }), status == "failed" || status == "cancelled" {
                let message = value["error"]?["message"].flatMap { RawJSON.string($0, in: body) }
                providerError = (message ?? "the \(type!) event's response has status \(status)", body)
                return
            }
            terminal = type
            response = Array(payload[value.range])
            usage = value["usage"].flatMap { AttemptJudge.counts($0, in: body) }
        default:
            // An OpenAI-compatible server may send chat's `{"error": ...}` shape instead.
            if let error = object["error"], case .object = error {
                providerError = (ProviderError.message(inBody: body) ?? "the stream carried an error", body)
            }
        }
    }

    public func verdict() -> StreamVerdict {
        if let providerError { return .providerError(message: providerError.message, body: providerError.body) }
        if let malformed { return .malformed(malformed) }
        guard terminal != nil else {
            let last = lastSequence.map { ", the last with sequence_number \($0)" } ?? ""
            return .incomplete("the stream ended without response.completed, response.incomplete or response.failed after \(eventCount) events\(last)")
        }
        return .complete(AssembledCompletion(head: [], content: response, tail: [], usage: usage))
    }
}
