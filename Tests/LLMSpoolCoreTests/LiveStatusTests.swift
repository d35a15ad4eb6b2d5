import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct TimestampTests {
    /// The hand-built text must be what Foundation's ISO 8601 formatter writes, and read back.
    @Test(arguments: [0.0, 0.001, 1.5, 86_399.999, 951_782_400.25, 1_796_076_605.123, 4_102_444_800.5, -1.25, -86_400.0,
                      1_709_164_799.999, 1_709_251_199.5, 253_402_300_799.999])
    func matchesTheFormatter(_ seconds: Double) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = Date(timeIntervalSince1970: seconds)
        let text = Timestamp.string(date)
        #expect(text == formatter.string(from: date), "\(seconds)")
        let back = try #require(Timestamp.date(text))
        #expect(abs(back.timeIntervalSince1970 - seconds) < 0.001)
    }
}

@Suite struct JSONTextTests {
    /// Every ASCII character, alone and inside text, and text beyond ASCII: the quoted form
    /// reads back as the string, whether it needed an escape (character by character) or
    /// not (appended whole).
    @Test func everyCharacterReadsBack() throws {
        var samples = (0..<0x80).map { String(UnicodeScalar(UInt8($0))) }
        samples += samples.map { "id-\($0)-é😀" }
        samples += ["", "plain-id", "endpoint one", "ü😀", "a\"b", "a\\b", "tab\there", "\u{7f}", "\u{2028}"]
        for sample in samples {
            let quoted = JSONText.quoted(sample)
            let back = try JSONSerialization.jsonObject(with: Data(quoted.utf8), options: [.fragmentsAllowed]) as? String
            #expect(back == sample, "\(sample.unicodeScalars.map(\.value))")
            let needsEscape = sample.utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
            if !needsEscape { #expect(quoted == "\"" + sample + "\"") }
        }
    }
}

@Suite struct LiveStatusTests {
    @Test func theHandWrittenFileReadsBack() throws {
        let layout = SpoolLayout(root: FileManager.default.temporaryDirectory.appendingPathComponent("live-\(UUID())").path)
        try layout.create()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let transfers = (0..<3).map { index in
            TransferEngine.LiveTransfer(id: "t\(index)", startedAt: Date(timeIntervalSince1970: 1_700_000_000.5 + Double(index)),
                                        bytesReceived: Int64(index) * 1000, events: index, attempt: index + 1,
                                        endpoint: "end \"point\"\\\n\u{1}é")
        }
        let status = LiveStatus(pid: getpid(), updatedAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000),
                                queued: 4, deferred: 5, inFlight: transfers)
        try DurableFile.replace(status.encoded(), at: LiveStatus.path(layout))
        #expect(LiveStatus.read(layout) == status)
        #expect(JSONObject.parse(status.encoded()) != nil)
    }
}
