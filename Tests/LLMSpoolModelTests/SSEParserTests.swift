import Testing
@testable import LLMSpoolModel

@Suite struct SSEParserTests {
    func events(_ chunks: [[UInt8]]) -> [SSEParser.Event] {
        var parser = SSEParser()
        var out: [SSEParser.Event] = []
        for chunk in chunks { parser.feed(chunk) { out.append($0) } }
        parser.finish { out.append($0) }
        return out
    }

    @Test func splitsEventsOnBlankLines() {
        let stream = Array("data: one\n\ndata: two\n\n".utf8)
        #expect(events([stream]) == [.data("one"), .data("two")])
    }

    @Test func everySplitPointGivesTheSameEvents() {
        let stream = Array("data: {\"a\":\"ü😀\"}\r\n\r\n: keep-alive\n\ndata: x\rdata: y\r\r".utf8)
        let whole = events([stream])
        #expect(whole == [.data("{\"a\":\"ü😀\"}"), .comment, .data("x\ny")])
        for cut in 0...stream.count {
            #expect(events([Array(stream[..<cut]), Array(stream[cut...])]) == whole, "cut at \(cut)")
        }
        #expect(events(stream.map { [$0] }) == whole)
    }

    /// One UTF-8 byte order mark at the start of the stream is not part of its first line,
    /// wherever the reads split it; elsewhere, or not whole, its bytes are content.
    @Test func aLeadingByteOrderMarkIsIgnored() {
        let stream: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("data: x\n\ndata: \u{FEFF}y\n\n".utf8)
        let whole = events([stream])
        #expect(whole == [.data("x"), .data("\u{FEFF}y")])
        for cut in 0...stream.count {
            #expect(events([Array(stream[..<cut]), Array(stream[cut...])]) == whole, "cut at \(cut)")
        }
        #expect(events(stream.map { [$0] }) == whole)
        #expect(events([[0xEF, 0xBB], Array("data: z\n\n".utf8)]) == [], "a partial mark is the start of a line that is not a field")
        #expect(events([[0xEF], Array("\ndata: z\n\n".utf8)]) == [.data("z")])
    }

    @Test func commentsAreReportedAndCarryNoData() {
        #expect(events([Array(": ping\n\n:\n\n".utf8)]) == [.comment, .comment])
    }

    @Test func otherFieldsAreIgnoredAndDataLinesJoin() {
        let stream = Array("event: message\nid: 7\nretry: 10\ndata: a\ndata:b\ndata\n\n".utf8)
        #expect(events([stream]) == [.data("a\nb\n")])
    }

    @Test func aFinalEventWithoutBlankLineIsDelivered() {
        #expect(events([Array("data: [DONE]".utf8)]) == [.data("[DONE]")])
        #expect(events([Array("data: [DONE]\n".utf8)]) == [.data("[DONE]")])
    }

    @Test func blankLinesAloneDispatchNothing() {
        #expect(events([Array("\n\n\r\n".utf8)]).isEmpty)
    }

    /// Lines taken in place (whole in one read) and lines gathered across reads go through
    /// the same rules: every pair of cut points gives the whole stream's events.
    @Test func linesWholeInOneReadAndLinesAcrossReadsAgree() {
        let stream = Array("dat: no\ndatum: no\ndata\ndata:\ndata:x\n:c\nda\n\r\ndata:  two spaces\r\n\ndata: [DONE]".utf8)
        let whole = events([stream])
        #expect(whole == [.comment, .data("\n\nx"), .data(" two spaces"), .data("[DONE]")])
        for first in 0...stream.count {
            for second in first...stream.count {
                let parts = [Array(stream[..<first]), Array(stream[first..<second]), Array(stream[second...])]
                #expect(events(parts) == whole, "cuts at \(first) and \(second)")
            }
        }
    }

    /// The word-at-a-time scan finds a line end at every offset within and across words,
    /// among bytes that differ from LF and CR by one bit, as a byte loop does.
    @Test func lineEndsAreFoundAtEveryOffsetOfAWord() {
        let fillers: [UInt8] = [0x0B, 0x0C, 0x0E, 0x8A, 0x8D, 0x4A, 0xFF, 0x00, UInt8(ascii: "x")]
        for filler in fillers {
            for length in 0..<40 {
                let value = [UInt8](repeating: filler, count: length)
                for ending in [[0x0A], [0x0D], [0x0D, 0x0A]] as [[UInt8]] {
                    let stream = Array("data: ".utf8) + value + ending + ending + Array("data: z".utf8) + ending + ending
                    let got = events([stream])
                    #expect(got == [.data(String(decoding: value, as: UTF8.self)), .data("z")], "filler \(filler), length \(length), ending \(ending)")
                }
            }
        }
    }

    @Test func theWordTestFlagsExactlyTheWordsWithALineEnd() {
        for position in 0..<8 {
            for byte in 0...255 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 8)
                bytes[position] = UInt8(byte)
                var word: UInt64 = 0
                for (index, value) in bytes.enumerated() { word |= UInt64(value) << (8 * UInt64(index)) }
                #expect(SSEParser.holdsLineEnd(word) == (byte == 0x0A || byte == 0x0D), "byte \(byte) at \(position)")
            }
        }
    }
}
