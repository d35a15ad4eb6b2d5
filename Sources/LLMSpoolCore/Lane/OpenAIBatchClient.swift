import Glibc

/// OpenAI's Files and Batches API as the lane's steps use it: each call made over
/// `LaneHTTP` and its answer turned into the event `RemoteBatchMachine` takes. What an
/// answer proves (a refusal that changed nothing, or a create that may have committed) is
/// the model's to decide; this only reports what came back.
struct OpenAIBatchClient {
    let endpoint: Endpoint
    let http: LaneHTTP
    /// Largest JSON answer of the API kept in memory (a list page, a Batch object).
    static let answerLimit = 16 << 20
    /// A page of the list: the most OpenAI gives.
    static let pageSize = 100

    private var headers: [String] {
        var lines = ["Accept: application/json"]
        if let key = endpoint.apiKey?.value { lines.append("Authorization: Bearer \(key)") }
        return lines
    }

    func upload(group: String, source: LaneUploadSource) -> RemoteBatchMachine.Event {
        let answer: LaneHTTP.Answer
        do {
            answer = try http.exchange(method: "POST", url: endpoint.baseURL + "/files",
                                       headers: headers + ["Content-Type: \(LaneUploadBody(group: group).contentType)"],
                                       body: source, sink: .memory(limit: Self.answerLimit))
        } catch let failure as LaneHTTP.BodyFailure {
            return .failed(retryable: false, retryAfter: nil, message: "the upload cannot be made: \(failure)")
        } catch {
            return .failed(retryable: true, retryAfter: nil, message: "the upload failed: \(error)")
        }
        guard (200..<300).contains(answer.status) else { return refusal("the upload", answer) }
        do {
            return .uploaded(fileID: try OpenAIBatchAnswers.id(answer.body))
        } catch {
            return .failed(retryable: true, retryAfter: nil, message: "the upload's answer cannot be read: \(error)")
        }
    }

    func create(inputFileID: String, url: String, group: String) -> RemoteBatchMachine.Event {
        let body = OpenAIBatchAnswers.createBody(inputFileID: inputFileID, url: url, group: group)
        let answer: LaneHTTP.Answer
        do {
            answer = try http.exchange(method: "POST", url: endpoint.baseURL + "/batches", headers: headers + ["Content-Type: application/json"],
                                       body: LaneBytesBody(body), sink: .memory(limit: Self.answerLimit))
        } catch {
            return RemoteBatchMachine.eventForFailedCreate(status: nil, retryAfter: nil, message: "the create got no answer: \(error)")
        }
        guard (200..<300).contains(answer.status) else {
            return RemoteBatchMachine.eventForFailedCreate(status: answer.status, retryAfter: answer.retryAfter,
                                                           message: describe("the create", answer))
        }
        // A success whose body cannot be read may still have created the batch.
        // No readable id is the answer: the batch is then looked for by its metadata.
        guard let id = try? OpenAIBatchAnswers.id(answer.body) else { return .createUncertain }
        return .created(batchID: id)
    }

    func list(after: String?) -> RemoteBatchMachine.Event {
        var url = endpoint.baseURL + "/batches?limit=\(Self.pageSize)"
        if let after { url += "&after=" + LaneURL.escaped(after) }
        switch get(url, "the list") {
        case .success(let body):
            do {
                return .listed(try OpenAIBatchAnswers.listing(body))
            } catch {
                return .failed(retryable: true, retryAfter: nil, message: "the list cannot be read: \(error)")
            }
        case .failure(let event):
            return event
        }
    }

    func poll(batchID: String) -> RemoteBatchMachine.Event {
        switch get(endpoint.baseURL + "/batches/" + LaneURL.escaped(batchID), "the poll", notFoundIsGone: true) {
        case .success(let body):
            do {
                return .polled(try OpenAIBatchAnswers.status(body))
            } catch {
                return .failed(retryable: true, retryAfter: nil, message: "the batch cannot be read: \(error)")
            }
        case .failure(let event):
            return event
        }
    }

    /// `POST /batches/{id}/cancel`: a refusal other than 408, 429 or 5xx (the batch ended
    /// meanwhile, say) is not retried.
    func cancel(batchID: String) -> RemoteBatchMachine.Event {
        let answer: LaneHTTP.Answer
        do {
            answer = try http.exchange(method: "POST", url: endpoint.baseURL + "/batches/" + LaneURL.escaped(batchID) + "/cancel",
                                       headers: headers, body: LaneBytesBody([]), sink: .memory(limit: Self.answerLimit))
        } catch {
            return .failed(retryable: true, retryAfter: nil, message: "the cancel failed: \(error)")
        }
        guard (200..<300).contains(answer.status) else { return refusal("the cancel", answer) }
        return .cancelRequested
    }

    /// Streams a file's content to `fd`; nil when it all arrived, else the event to report.
    func download(fileID: String, to fd: borrowing FileDescriptor, path: String) -> RemoteBatchMachine.Event? {
        http.download(endpoint.baseURL + "/files/" + LaneURL.escaped(fileID) + "/content", headers: headers, what: "the download of \(fileID)", to: fd, path: path)
    }

    private func get(_ url: String, _ what: String, notFoundIsGone: Bool = false) -> LaneHTTP.Read {
        http.read(url, headers: headers, what: what, limit: Self.answerLimit, notFoundIsGone: notFoundIsGone, describe: describe)
    }

    /// An upload's refusal: 408, 409, 429 and 5xx may pass; another 4xx will not.
    private func refusal(_ what: String, _ answer: LaneHTTP.Answer) -> RemoteBatchMachine.Event {
        let retryable = answer.status == 408 || answer.status == 409 || answer.status == 429 || answer.status >= 500
        return .failed(retryable: retryable, retryAfter: answer.retryAfter, message: describe(what, answer))
    }

    private func describe(_ what: String, _ answer: LaneHTTP.Answer) -> String {
        let detail = OpenAIBatchAnswers.errorMessage(answer.body).map { ": \(Logger.escape($0))" } ?? ""
        return "\(what) answered HTTP \(answer.status)\(detail)"
    }
}
