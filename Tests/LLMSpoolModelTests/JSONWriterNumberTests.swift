import Testing
@testable import LLMSpoolModel

/// Numbers written into byte buffers must read as Swift prints them, at every edge.
@Suite struct JSONWriterNumberTests {
    @Test(arguments: [Int64.min, Int64.min + 1, -10, -1, 0, 1, 9, 10, 99, 100, 1_765_000_000_123_456_789, Int64.max])
    func aSignedNumberReadsAsSwiftPrintsIt(_ value: Int64) {
        var out: [UInt8] = [0x78]
        JSONWriter.appendDecimal(value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x\(value)")
    }

    @Test(arguments: [UInt64.min, 7, 10, 1 << 32, 9_999_999_999_999_999_999, UInt64.max])
    func anUnsignedNumberReadsAsSwiftPrintsIt(_ value: UInt64) {
        var out: [UInt8] = []
        JSONWriter.appendDecimal(value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "\(value)")
    }

    @Test func anObjectSeparatesItsMembersOnly() {
        var object = JSONObjectBytes(open: "{", separator: ", ", colon: ": ")
        #expect(object.bytes == Array("{".utf8))
        object.string("a\"", "x\ny")
        object.integer("b", Int64(-3))
        object.raw("c", "[1]".utf8)
        #expect(String(decoding: object.closed("}"), as: UTF8.self) == #"{"a\"": "x\ny", "b": -3, "c": [1]}"#)
    }
}
