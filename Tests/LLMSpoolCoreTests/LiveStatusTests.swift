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
        var status = LiveStatus(pid: getpid(), updatedAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000),
                                queued: 4, deferred: 5, inFlight: transfers)
        status.intakePaused = "the spool's filesystem has 1 bytes free, below \"min_free_bytes\" 2"
        try DurableFile.replace(status.encoded(), at: LiveStatus.path(layout))
        #expect(LiveStatus.read(layout) == status)
        #expect(JSONObject.parse(status.encoded()) != nil)
    }

    /// A status written in the future (the clock stepped back after its daemon died) is not
    /// fresh: it would say "running" until that time came.
    @Test func aStatusFromTheFutureIsNotFresh() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(LiveStatus.isFresh(now.addingTimeInterval(-1), now: now))
        #expect(LiveStatus.isFresh(now.addingTimeInterval(1), now: now), "a second of skew")
        #expect(!LiveStatus.isFresh(now.addingTimeInterval(-10), now: now))
        #expect(!LiveStatus.isFresh(now.addingTimeInterval(86_400), now: now))
    }
}

/// The background lane's remote batches in the live status file and the metrics: each one's
/// id, state and the provider's request counts.
@Suite struct RemoteBatchProgressTests {
    static let polled = BackgroundLane.Progress(group: "g00000000000000a1", endpoint: "batchy \"b\"", state: "polling", batchID: "batch_7",
                                                remoteStatus: "in_progress", members: 40, total: 40, completed: 12, failed: 3)
    static let unpolled = BackgroundLane.Progress(group: "g00000000000000a2", endpoint: "batchy", state: "uploaded", batchID: nil,
                                                  remoteStatus: nil, members: 5)

    @Test func theLiveStatusCarriesEachRemoteBatchAndReadsItBack() throws {
        let layout = SpoolLayout(root: FileManager.default.temporaryDirectory.appendingPathComponent("remote-\(UUID())").path)
        try layout.create()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        var status = LiveStatus(pid: getpid(), updatedAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000),
                                queued: 0, deferred: 0, inFlight: [])
        status.remoteBatches = [Self.polled, Self.unpolled]
        try DurableFile.replace(status.encoded(), at: LiveStatus.path(layout))
        #expect(LiveStatus.read(layout)?.remoteBatches == [Self.polled, Self.unpolled])
    }

    @Test func countsThatAreNotWholeNumbersAreLeftOut() {
        let read = BackgroundLane.Progress(json: ["group": "g1", "endpoint": "e", "state": "polling", "requests": 3,
                                                  "request_counts": ["total": "3", "completed": 1, "failed": 0]])
        #expect(read != nil && read?.total == nil && read?.completed == nil)
        #expect(BackgroundLane.Progress(json: ["endpoint": "e", "state": "polling"]) == nil, "no group: not an entry")
    }

    @Test func theMetricsShowEachRemoteBatchsCountsByKind() {
        let metrics = Metrics()
        metrics.remoteBatches([Self.polled, Self.unpolled])
        let text = metrics.render()
        #expect(text.contains("# TYPE llmspool_remote_batch_requests gauge\n"))
        let polled = #"llmspool_remote_batch_requests{group="g00000000000000a1",batch="batch_7",status="in_progress","#
        #expect(text.contains(polled + #"kind="total"} 40"# + "\n"), "\(text)")
        #expect(text.contains(polled + #"kind="completed"} 12"# + "\n"))
        #expect(text.contains(polled + #"kind="failed"} 3"# + "\n"))
        // Before the first poll: its members, nothing completed, and the lane's own state.
        #expect(text.contains(#"llmspool_remote_batch_requests{group="g00000000000000a2",batch="",status="uploaded",kind="total"} 5"# + "\n"))
        metrics.remoteBatches([])
        #expect(!metrics.render().contains("llmspool_remote_batch_requests{"), "an ended remote batch leaves the metrics")
    }

    @Test func statusTextAndJSONNameTheCounts() {
        var group = LaneQuery.Group(group: "g1", endpoint: "batchy", state: "polling", batchID: "batch_7", remoteStatus: "in_progress", members: ["a", "b"])
        #expect(group.description == "deferred to batch batch_7 (in_progress) on batchy")
        group.counts = (2, 1, 0)
        #expect(group.description == "deferred to batch batch_7 (in_progress, 1 of 2 completed, 0 failed) on batchy")
        #expect(group.json["request_counts"] as? [String: Int] == ["total": 2, "completed": 1, "failed": 0])
    }
}
