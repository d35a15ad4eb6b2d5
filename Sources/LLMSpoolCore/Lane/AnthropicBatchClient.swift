/// Anthropic's Message Batches API as the lane's steps use it, beside `OpenAIBatchClient`:
/// no upload (the create carries the members' bodies, streamed by `AnthropicBatchSource`),
/// then retrieve, list, cancel and the results streamed to disk. Each answer becomes the
/// event `RemoteBatchMachine` takes; what it proves is the model's to decide.
struct AnthropicBatchClient {
    let endpoint: Endpoint
    let http: LaneHTTP
    /// Largest JSON answer of the API kept in memory (a list page, a message_batch).
    static let answerLimit = 16 << 20
    /// A page of the list: the most Anthropic gives.
    static let pageSize = 1000

    private var batchesURL: String { endpoint.url(for: MessagesDialect()) + "/batches" }

    private var headers: [String] {
        ["Accept: application/json"]
            + MessagesDialect().headers(apiKey: endpoint.apiKey?.value, anthropicVersion: endpoint.anthropicVersion)
    }

    func create(source: AnthropicBatchSource) -> RemoteBatchMachine.Event {
        let answer: LaneHTTP.Answer
        do {
            answer = try http.exchange(method: "POST", url: batchesURL, headers: headers + ["Content-Type: application/json"],
                                       body: source, sink: .memory(limit: Self.answerLimit))
        } catch let failure as LaneHTTP.BodyFailure {
            return .failed(retryable: false, retryAfter: nil, message: "the create cannot be made: \(failure)")
        } catch {
            return RemoteBatchMachine.eventForFailedCreate(status: nil, retryAfter: nil, message: "the create got no answer: \(error)")
        }
        guard (200..<300).contains(answer.status) else {
            return RemoteBatchMachine.eventForFailedCreate(status: answer.status, retryAfter: answer.retryAfter,
                                                           message: describe("the create", answer))
        }
        // A success whose body cannot be read may still have created the batch.
        do {
            return .created(batchID: try AnthropicBatchAnswers.id(answer.body))
        } catch {
            return .createUncertain
        }
    }

    func list(after: String?) -> RemoteBatchMachine.Event {
        var url = batchesURL + "?limit=\(Self.pageSize)"
        if let after { url += "&after_id=" + LaneURL.escaped(after) }
        switch get(url, "the list") {
        case .success(let body):
            do {
                return .listed(try AnthropicBatchAnswers.listing(body))
            } catch {
                return .failed(retryable: true, retryAfter: nil, message: "the list cannot be read: \(error)")
            }
        case .failure(let event):
            return event
        }
    }

    func poll(batchID: String) -> RemoteBatchMachine.Event {
        switch get(batchesURL + "/" + LaneURL.escaped(batchID), "the poll", notFoundIsGone: true) {
        case .success(let body):
            do {
                return .polled(try AnthropicBatchAnswers.status(body))
            } catch {
                return .failed(retryable: true, retryAfter: nil, message: "the message batch cannot be read: \(error)")
            }
        case .failure(let event):
            return event
        }
    }

    /// `POST .../{id}/cancel`: a refusal other than 408, 409, 429 or 5xx is not retried.
    func cancel(batchID: String) -> RemoteBatchMachine.Event {
        let answer: LaneHTTP.Answer
        do {
            answer = try http.exchange(method: "POST", url: batchesURL + "/" + LaneURL.escaped(batchID) + "/cancel",
                                       headers: headers, body: LaneBytesBody([]), sink: .memory(limit: Self.answerLimit))
        } catch {
            return .failed(retryable: true, retryAfter: nil, message: "the cancel failed: \(error)")
        }
        guard (200..<300).contains(answer.status) else {
            let retryable = answer.status == 408 || answer.status == 409 || answer.status == 429 || answer.status >= 500
            return .failed(retryable: retryable, retryAfter: answer.retryAfter, message: describe("the cancel", answer))
        }
        return .cancelRequested
    }

    /// Streams the batch's results JSONL to `fd`; nil when it all arrived, else the event to
    /// report. The results are fetched at the endpoint's own `.../{id}/results`, not at the
    /// answer's `results_url`: a URL from the network must not be sent the key.
    func downloadResults(batchID: String, to fd: borrowing FileDescriptor, path: String) -> RemoteBatchMachine.Event? {
        http.download(batchesURL + "/" + LaneURL.escaped(batchID) + "/results", headers: headers, what: "the results of \(batchID)", to: fd, path: path)
    }

    /// Reads the first line of an ended batch's results: its custom_id tells whose it is. A
    /// batch with no results (or none yet) names no group.
    func inspect(batchID: String) -> RemoteBatchMachine.Event {
        let answer: LaneHTTP.Answer
        do {
            answer = try http.exchange(method: "GET", url: batchesURL + "/" + LaneURL.escaped(batchID) + "/results", headers: headers,
                                       body: nil, sink: .firstLine(limit: Self.answerLimit))
        } catch {
            return .failed(retryable: true, retryAfter: nil, message: "reading the first result of \(batchID) failed: \(error)")
        }
        // A batch that is gone cannot be the group's to poll.
        if answer.status == 404 { return .inspected(batchID: batchID, group: nil) }
        guard (200..<300).contains(answer.status) else {
            return .failed(retryable: true, retryAfter: answer.retryAfter, message: describe("the results of \(batchID)", answer))
        }
        return .inspected(batchID: batchID, group: AnthropicBatchAnswers.group(ofFirstResultLine: answer.body))
    }

    private func get(_ url: String, _ what: String, notFoundIsGone: Bool = false) -> LaneHTTP.Read {
        http.read(url, headers: headers, what: what, limit: Self.answerLimit, notFoundIsGone: notFoundIsGone, describe: describe)
    }

    private func describe(_ what: String, _ answer: LaneHTTP.Answer) -> String {
        let detail = AnthropicBatchAnswers.errorMessage(answer.body).map { ": \(Logger.escape($0))" } ?? ""
        return "\(what) answered HTTP \(answer.status)\(detail)"
    }
}
