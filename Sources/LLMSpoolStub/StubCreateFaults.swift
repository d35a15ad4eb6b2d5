/// How an upload, a batch create or a poll meets the faults it was given, the same in the
/// Batches and the Message Batches API: the next fault in line is taken, and a `lost` one
/// lets the create commit and then cuts its answer.
enum StubCreateFaults {
    /// The next fault in line, taken; nil when none is left.
    static func next(_ faults: inout [StubBatchOptions.Fault]) -> StubBatchOptions.Fault? {
        faults.isEmpty ? nil : faults.removeFirst()
    }

    /// `response` sent one byte every half second.
    static func trickled(_ response: StubResponder.Response) -> StubResponder.Response {
        var slow = response
        slow.pieces = response.body.map { StubResponder.Piece(bytes: [$0], delayMs: 500) }
        return slow
    }

    /// A committed create's answer: whole, or when `lost` only its first bytes, after which
    /// the connection drops.
    static func answer(_ response: StubResponder.Response, lost: Bool) -> StubResponder.Response {
        guard lost else { return response }
        var cut = response
        // Committed, and the answer never arrives whole.
        cut.pieces = [StubResponder.Piece(bytes: Array(response.body.prefix(10)), delayMs: 0)]
        cut.abortAtEnd = true
        return cut
    }
}
