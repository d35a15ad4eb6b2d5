import Testing
@testable import LLMSpoolStub

/// The stub's batch faults: `--batch-faults` read entry by entry, and a download cut short
/// where the tests need it (half the output, at a line's end when one ends in that half).
@Suite struct StubBatchFaultsTests {
    @Test func everyKindOfEntryIsReadInOrder() throws {
        let faults = try StubBatchOptions.faults("upload:500,create:429,create:lost,download:cut,create:500,download:cut").get()
        #expect(faults.upload == [.status(500)])
        #expect(faults.create == [.status(429), .lost, .status(500)])
        #expect(faults.download == [.cut, .cut])
        #expect(faults.poll.isEmpty)
        let echoes = try StubBatchOptions.faults("upload:echo_key,create:echo_key,poll:echo_key,poll:echo_key").get()
        #expect(echoes.upload == [.echoKey] && echoes.create == [.echoKey] && echoes.poll == [.echoKey, .echoKey] && echoes.download.isEmpty)
        #expect(try StubBatchOptions.faults("poll:404,poll:trickle,poll:500").get().poll == [.status(404), .trickle, .status(500)])
    }

    @Test(arguments: ["upload:cut", "create:cut", "download:lost", "download:500", "upload:lost", "download", "results:cut", "create:200", "create:x", "poll:lost", "poll:200", "download:echo_key"])
    func anEntryThatIsNoFaultIsNamed(entry: String) {
        let text = "create:429," + entry
        guard case .failure(let error) = StubBatchOptions.faults(text) else {
            Issue.record("\(entry) was taken")
            return
        }
        #expect(error.entry == entry)
        #expect(error.description.contains("\"\(entry)\"") && error.description.contains("download:cut"))
    }

    @Test func aCutSendsTheLinesThatEndInTheFirstHalfAndDropsTheConnection() {
        let output = Array("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n".utf8)
        var faults: [StubBatchOptions.Fault] = [.cut]
        let cut = StubDownloadFaults.answer(output, contentType: "application/binary", faults: &faults)
        #expect(faults.isEmpty, "the fault is taken")
        #expect(cut.abortAtEnd)
        #expect(cut.body == Array("{\"a\":1}\n{\"b\":2}\n".utf8))
        let whole = StubDownloadFaults.answer(output, contentType: "application/binary", faults: &faults)
        #expect(!whole.abortAtEnd && whole.body == output, "no fault left: the whole output")
        #expect(whole.status == 200 && whole.headers.first?.1 == "application/binary")
    }

    @Test func aCutWithNoLineEndInTheFirstHalfSendsHalfTheBytes() {
        let output = Array("{\"only\":\"one line without its end\"}".utf8)
        var faults: [StubBatchOptions.Fault] = [.cut]
        let cut = StubDownloadFaults.answer(output, contentType: "application/octet-stream", faults: &faults)
        #expect(cut.abortAtEnd && cut.body == Array(output[..<(output.count / 2)]))
        var again: [StubBatchOptions.Fault] = [.cut]
        let tiny = StubDownloadFaults.answer([0x7B], contentType: "application/octet-stream", faults: &again)
        #expect(tiny.abortAtEnd && tiny.body == [0x7B], "a byte is sent, never more than the output")
        var none: [StubBatchOptions.Fault] = [.cut]
        let empty = StubDownloadFaults.answer([], contentType: "application/octet-stream", faults: &none)
        #expect(empty.abortAtEnd && empty.body.isEmpty)
    }
}
