import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct RawJSONTests {
    /// Whether Foundation reads the text as an object or an array.
    func foundationAccepts(_ bytes: [UInt8]) -> Bool {
        guard let value = try? JSONSerialization.jsonObject(with: Data(bytes)) else { return false }
        return value is [String: Any] || value is [Any]
    }

    func rawAccepts(_ bytes: [UInt8]) -> Bool {
        switch try? RawJSON.parse(bytes) {
        case .object?, .array?: true
        default: false
        }
    }

    @Test(arguments: [
        #"{}"#, #"[]"#, #" { "a" : [1, -2.5e3, true, false, null, "x"] } "#, #"{"a":"\ud83d\ude00"}"#,
        #"{"a":"\ud83d"}"#, #"{"a":"\ude00"}"#, #"{"a":"\ud83d\u0041"}"#, #"{"a":"\x"}"#, #"{"a":"\u12"}"#,
        #"{"a":01}"#, #"{"a":-}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":1e}"#, #"{"a":1e400}"#, #"{"a":-0}"#,
        #"{"a":1E+2}"#, #"{"a":tru}"#, #"{"a":nul}"#, #"{"a",1}"#, #"[1 2]"#,
        #"{"a":1}x"#, #"{"a":1} "#, #"{'a':1}"#, "{\"a\":\"tab\there\"}", "{\"é\":\"ü→𝄞\"}", #"{"a":"\/\b\f\n\r\t\"\\"}"#,
        "", " ", "[", "{\"a\":", "\"s\"", "12",
    ])
    func agreesWithFoundation(_ text: String) {
        let bytes = Array(text.utf8)
        #expect(rawAccepts(bytes) == foundationAccepts(bytes), "\(text)")
    }

    /// Foundation lets a trailing comma pass; the standard does not, and neither does the
    /// reader: text it accepts is copied into results that any JSON reader must read.
    @Test(arguments: [#"{"a":1,}"#, #"[1,]"#])
    func isStricterThanFoundationAboutTrailingCommas(_ text: String) {
        #expect(!rawAccepts(Array(text.utf8)))
    }

    @Test func refusesWhatIsNotUTF8OrIsTooDeep() {
        let invalid: [[UInt8]] = [
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D],        // a byte never in UTF-8
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x22, 0x7D],        // a cut two-byte sequence
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x7D],  // an encoded surrogate
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC0, 0xAF, 0x22, 0x7D],  // an overlong slash
        ]
        for bytes in invalid {
            #expect(!rawAccepts(bytes), "\(bytes)")
            #expect(!foundationAccepts(bytes), "\(bytes)")
        }
        let deep = Array(String(repeating: "[", count: 5000).utf8) + Array(String(repeating: "]", count: 5000).utf8)
        #expect(throws: RawJSON.SyntaxError.self) { try RawJSON.parse(deep) }
    }

    @Test func valuesKeepTheirTextAsWritten() throws {
        let text = Array(#"{"s":"a\"b\u00e9","n":-1.5e2,"o":{"k":[null,true]},"s":"last"}"#.utf8)
        let value = try RawJSON.parse(text)
        guard case .object(let members, let range) = value else {
            Issue.record("expected an object")
            return
        }
        #expect(range == 0..<text.count)
        #expect(members.map(\.key) == ["s", "n", "o", "s"])
        guard case .string(let escaped) = members[0].value else {
            Issue.record("expected a string")
            return
        }
        #expect(String(decoding: text[escaped], as: UTF8.self) == #"a\"b\u00e9"#)
        #expect(text.withUnsafeBytes { RawJSON.decodeString(UnsafeRawBufferPointer(rebasing: $0[escaped])) } == "a\"bé")
        #expect(String(decoding: text[members[1].value.range], as: UTF8.self) == "-1.5e2")
        #expect(String(decoding: text[try #require(value["o"]).range], as: UTF8.self) == #"{"k":[null,true]}"#)
        // A repeated key: the last one wins, as in Foundation.
        guard case .string(let last)? = value["s"] else {
            Issue.record("expected a string")
            return
        }
        #expect(String(decoding: text[last], as: UTF8.self) == "last")
    }

    @Test func longStringsAreScannedWordByWordWithoutMissingAnything() throws {
        // Every special byte at every offset modulo 8 must still be seen.
        for offset in 0..<16 {
            let padding = String(repeating: "x", count: offset)
            for special in ["\\\"", "\\n", "é", "\u{1F600}"] {
                let text = #"{"a":""# + padding + special + String(repeating: "y", count: 20) + #""}"#
                #expect(rawAccepts(Array(text.utf8)), "\(offset) \(special)")
            }
            var control = Array(#"{"a":""#.utf8) + Array(repeating: UInt8(ascii: "z"), count: offset)
            control += [0x01] + Array(repeating: UInt8(ascii: "z"), count: 20) + Array(#""}"#.utf8)
            #expect(!rawAccepts(control), "control character at \(offset)")
            let unterminated = Array(#"{"a":""#.utf8) + Array(repeating: UInt8(ascii: "z"), count: offset + 9)
            #expect(!rawAccepts(unterminated))
        }
    }

    @Test func decodesEscapesIncludingPairs() {
        let escaped = Array(#"x\n\t\"\\\/\u0041\ud83d\ude00\u00e9"#.utf8)
        #expect(escaped.withUnsafeBytes { RawJSON.decodeString($0) } == "x\n\t\"\\/A\u{1F600}é")
    }

    @Test func valueIfJSONIsTheParseOrNil() {
        #expect(RawJSON.valueIfJSON(Array(#"{"a":[1,2]}"#.utf8)) != nil)
        for text in ["", "{", "nope", #"{"a":}"#, "[1,]"] {
            #expect(RawJSON.valueIfJSON(Array(text.utf8)) == nil, "\(text)")
        }
    }
}
