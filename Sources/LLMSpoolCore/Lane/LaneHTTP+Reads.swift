/// The reads both providers' batch clients make: a small answer into memory, or a large one
/// streamed to a file. A read changes nothing remote, so every failure of one is tried
/// again, with backoff.
extension LaneHTTP {
    enum Read {
        case success([UInt8])
        case failure(RemoteBatchMachine.Event)
    }

    /// The provider says what was read does not exist.
    static func saysGone(_ status: Int) -> Bool { status == 404 || status == 410 }

    /// GETs `url` into memory (at most `limit` bytes); `describe` words a refusal.
    /// `notFoundIsGone`: a 404 or 410 says the thing read no longer exists (a poll's batch),
    /// not that the API lacks the call (a proxy without a batch list).
    func read(_ url: String, headers: [String], what: String, limit: Int, notFoundIsGone: Bool = false,
              describe: (String, Answer) -> String) -> Read {
        let answer: Answer
        do {
            answer = try exchange(method: "GET", url: url, headers: headers, body: nil, sink: .memory(limit: limit))
        } catch {
            return .failure(.failed(retryable: true, retryAfter: nil, message: "\(what) failed: \(error)"))
        }
        guard (200..<300).contains(answer.status) else {
            if notFoundIsGone && Self.saysGone(answer.status) { return .failure(.gone(message: describe(what, answer))) }
            return .failure(.failed(retryable: true, retryAfter: answer.retryAfter, message: describe(what, answer)))
        }
        return .success(answer.body)
    }

    /// GETs `url` streamed to `fd`; nil when it all arrived, else the event to report.
    func download(_ url: String, headers: [String], what: String, to fd: borrowing FileDescriptor, path: String) -> RemoteBatchMachine.Event? {
        let answer: Answer
        do {
            answer = try exchange(method: "GET", url: url, headers: headers, body: nil, sink: .file(fd: fd.rawValue, path: path))
        } catch {
            // Past its group's answers' size the file cannot be what was asked for.
            let retryable = (error as? TransportFailure)?.retryable ?? true
            return .failed(retryable: retryable, retryAfter: nil, message: "\(what) failed: \(error)")
        }
        guard answer.status == 200 else {
            if Self.saysGone(answer.status) { return .gone(message: "\(what) answered HTTP \(answer.status)") }
            return .failed(retryable: true, retryAfter: answer.retryAfter, message: "\(what) answered HTTP \(answer.status)")
        }
        return nil
    }
}
