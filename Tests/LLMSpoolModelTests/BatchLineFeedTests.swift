import Foundation
import Testing
@testable import LLMSpoolModel

/// Which lane each line of a batch file goes to, and when the feed stops for a lane with
/// no room: lines that may wait are counted apart from the live ones.
@Suite struct BatchLineFeedTests {
    static let routing = LaneRouting(endpoints: [LaneRouter.Endpoint(name: "live", batch: false), LaneRouter.Endpoint(name: "batchy", batch: true)])

    /// The task the runner makes of one batch line (its offsets the file's).
    func task(_ json: String, entry: Int = 0) throws -> TaskDescriptor {
        let bytes = Array(json.utf8)
        let line = try BatchLine.read(bytes, at: 0, fileSize: bytes.count).get()
        return TaskDescriptor(id: SpoolLayout.lineID(batch: "b", entry: entry), requestPath: "/s/outgoing/b.jsonl", summary: line.summary,
                              history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
    }

    func line(_ url: String = "/v1/chat/completions", window: String?) -> String {
        let body = url == "/v1/embeddings" ? #"{"model":"e","input":"x"}"# : #"{"model":"m","messages":[{"role":"user","content":"x"}]}"#
        let windowPart = window.map { #","completion_window":"\#($0)""# } ?? ""
        return #"{"custom_id":"c","method":"POST","url":"\#(url)","body":\#(body)\#(windowPart)}"#
    }

    @Test func eachRouteCountsInTheLaneItsTaskGoesTo() {
        #expect(BatchLineFeed.lane(of: .deferred(endpoint: 3)) == .background)
        #expect(BatchLineFeed.lane(of: .live) == .live)
        #expect(BatchLineFeed.lane(of: .noEndpoint) == .live, "a deferrable line nothing batches ends (or goes) live")
    }

    @Test func aLineFedToItsGroupCountsInTheBackgroundLaneWhateverItsRoute() {
        for route: LaneRouter.Route in [.deferred(endpoint: 3), .live, .noEndpoint] {
            #expect(BatchLineFeed.lane(of: route, fed: .toItsGroup) == .background, "\(route)")
            #expect(BatchLineFeed.lane(of: route, fed: .asRouted) == BatchLineFeed.lane(of: route), "\(route)")
        }
    }

    @Test func eachLaneHasItsOwnWindow() {
        let feed = BatchLineFeed(liveWindow: 2, backgroundWindow: 3)
        #expect(feed.admits(.live, live: 1, background: 3))
        #expect(!feed.admits(.live, live: 2, background: 0), "a full live window stops live lines whatever the lane holds")
        #expect(feed.admits(.background, live: 2, background: 2), "a full live window does not hold back lines that may wait")
        #expect(!feed.admits(.background, live: 0, background: 3))
    }

    @Test func theLanesBacklogHoldsBackOnlyLinesThatMayWait() {
        let feed = BatchLineFeed(liveWindow: 2, backgroundWindow: 10, laneBacklogLimit: 4)
        #expect(feed.admits(.background, live: 0, background: 3, laneBacklog: 3))
        #expect(!feed.admits(.background, live: 0, background: 3, laneBacklog: 4), "the lane has not taken in the last 4 yet")
        #expect(feed.waitsForLane(.background, background: 3, laneBacklog: 4), "held by the backlog alone: looked at again soon")
        #expect(feed.admits(.live, live: 1, background: 3, laneBacklog: 1_000), "live lines do not wait for the lane")
        #expect(!feed.waitsForLane(.live, background: 3, laneBacklog: 1_000))
        #expect(!feed.admits(.background, live: 0, background: 10, laneBacklog: 0))
        #expect(!feed.waitsForLane(.background, background: 10, laneBacklog: 9), "a full window waits for lines to end, not for the lane")
        #expect(!feed.waitsForLane(.background, background: 3, laneBacklog: 3), "admitted: nothing to wait for")
        #expect(BatchLineFeed(liveWindow: 1, backgroundWindow: 1, laneBacklogLimit: 0).laneBacklogLimit == 1)
        #expect(BatchLineFeed(liveWindow: 1, backgroundWindow: 1).laneBacklogLimit == BatchLineFeed.defaultLaneBacklogLimit)
    }

    @Test func windowsAreAtLeastOne() {
        let feed = BatchLineFeed(liveWindow: 0, backgroundWindow: -5)
        #expect(feed.liveWindow == 1 && feed.backgroundWindow == 1)
        #expect(feed.admits(.live, live: 0, background: 0) && feed.admits(.background, live: 0, background: 0))
    }

    @Test func aLineMayWaitOnlyWhenItOrTheConfigSays24h() throws {
        func lane(_ json: String, defaultWindow: String? = nil) throws -> BatchLineFeed.Lane {
            var routing = Self.routing
            routing.defaultWindow = defaultWindow
            return BatchLineFeed.lane(of: routing.route(try task(json)))
        }
        #expect(try lane(line(window: "24h")) == .background)
        #expect(try lane(line("/v1/embeddings", window: "24h")) == .background, "each url of OpenAI's Batch API")
        #expect(try lane(line(window: nil)) == .live)
        #expect(try lane(line(window: nil), defaultWindow: "24h") == .background, "default_completion_window applies to lines that name none")
        // Windows the providers do not offer are not deferrals, whatever the config's default.
        for other in ["1h", "48h", "24H", "", " 24h", "24h ", "86400", "24h\\u0000"] {
            #expect(try lane(line(window: other), defaultWindow: "24h") == .live, "\"\(other)\"")
        }
    }

    @Test func aRetriedOrStreamedLineGoesLive() throws {
        var retried = try task(line(window: "24h"))
        retried.history.attempts.append(AttemptEntry(startedAt: Date(timeIntervalSince1970: 0), endedAt: Date(timeIntervalSince1970: 1),
                                                     endpoint: "batchy", outcome: "expired"))
        #expect(BatchLineFeed.lane(of: Self.routing.route(retried)) == .live)
        let streamed = #"{"custom_id":"c","url":"/v1/chat/completions","completion_window":"24h","body":{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}}"#
        #expect(BatchLineFeed.lane(of: Self.routing.route(try task(streamed))) == .live)
    }

    @Test func aCompletionWindowThatIsNotAStringIsRefusedWithItsColumn() {
        let bytes = Array(#"{"custom_id":"c","url":"/v1/chat/completions","completion_window":24,"body":{"model":"m","messages":[]}}"#.utf8)
        guard case .failure(let problem) = BatchLine.read(bytes, at: 0, fileSize: bytes.count) else {
            Issue.record("a numeric completion_window was taken")
            return
        }
        #expect(problem.kind == .wrongType)
        #expect(problem.message.contains("completion_window"), "\(problem)")
        #expect(problem.column == 67, "\(problem)")
    }
}
