import Testing
@testable import LLMSpoolModel

@Suite struct LaneUploadBodyTests {
    @Test func theBodyIsHeadLinesTailWithBothParts() throws {
        let upload = LaneUploadBody(group: "g1")
        let lines = LaneInputLine.prefix(customID: "a", url: "/v1/chat/completions") + Array(#"{"model":"m"}"#.utf8) + LaneInputLine.suffix
        let body = upload.head + lines + upload.tail
        #expect(upload.size(linesBytes: lines.count) == body.count)
        let text = String(decoding: body, as: UTF8.self)
        #expect(upload.contentType == "multipart/form-data; boundary=llmspool-g1")
        #expect(text.hasPrefix("--llmspool-g1\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--llmspool-g1\r\n"))
        #expect(text.contains("name=\"file\"; filename=\"g1.jsonl\"\r\n"))
        #expect(text.hasSuffix(String(decoding: lines, as: UTF8.self) + "\r\n--llmspool-g1--\r\n"))
        #expect(text.components(separatedBy: "--llmspool-g1").count == 4, "two parts and the close, no delimiter inside the lines")
    }

    @Test func aSizeThatCannotBeIsNil() {
        let upload = LaneUploadBody(group: "g")
        #expect(upload.size(linesBytes: Int.max) == nil)
        #expect(upload.size(linesBytes: -1) == nil)
        #expect(upload.size(linesBytes: 0) == upload.head.count + upload.tail.count)
    }
}
