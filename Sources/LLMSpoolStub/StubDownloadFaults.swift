/// How a download of a batch's output meets the faults it was given, the same in the
/// Batches and the Message Batches API: the next fault in line is taken, and a `cut` one
/// sends the first half of the output and drops the connection.
enum StubDownloadFaults {
    /// The output as it is sent: whole, or when the next fault is `cut` its first half, up
    /// to the end of a line when one ends in it (the partial file then looks whole line by
    /// line, so only a client that notices the dropped connection tells it from the output).
    static func answer(_ output: [UInt8], contentType: String, faults: inout [StubBatchOptions.Fault]) -> StubResponder.Response {
        var response = StubResponder.Response(status: 200, headers: [("Content-Type", contentType)], latencyMs: 0,
                                              pieces: [.init(bytes: output, delayMs: 0)])
        guard StubCreateFaults.next(&faults) == .cut else { return response }
        let half = output.count / 2
        let end = output[..<half].lastIndex(of: 0x0A).map { $0 + 1 } ?? min(output.count, max(1, half))
        response.pieces = [.init(bytes: Array(output[..<end]), delayMs: 0)]
        response.abortAtEnd = true
        return response
    }
}
