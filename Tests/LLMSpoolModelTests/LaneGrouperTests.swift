import Testing
@testable import LLMSpoolModel

@Suite struct LaneGrouperTests {
    let chat = LaneGrouper.Key(endpoint: "openai", url: "/v1/chat/completions")
    let embeddings = LaneGrouper.Key(endpoint: "openai", url: "/v1/embeddings")
    let other = LaneGrouper.Key(endpoint: "second", url: "/v1/chat/completions")

    func member(_ id: String, _ bytes: Int = 100) -> LaneGrouper.Member { .init(id: id, bytes: bytes) }

    @Test func aGroupIsSentWhenItHoldsMaxRequests() {
        var grouper = LaneGrouper(limits: .init(maxRequests: 3, lingerSeconds: 60))
        #expect(grouper.handle(.added(member("a"), chat, at: 0)) == [])
        #expect(grouper.handle(.added(member("b"), chat, at: 1)) == [])
        #expect(grouper.handle(.added(member("c"), chat, at: 2)) == [.send(chat, [member("a"), member("b"), member("c")], .full)])
        #expect(grouper.waiting == 0)
        #expect(grouper.nextDeadline == nil)
    }

    @Test func aMemberThatWouldPassMaxBytesSendsTheGroupBeforeIt() {
        var grouper = LaneGrouper(limits: .init(maxRequests: 100, maxBytes: 250))
        _ = grouper.handle(.added(member("a", 100), chat, at: 0))
        _ = grouper.handle(.added(member("b", 100), chat, at: 0))
        #expect(grouper.handle(.added(member("c", 100), chat, at: 0)) == [.send(chat, [member("a", 100), member("b", 100)], .bytes)])
        #expect(grouper.waiting == 1)
        #expect(grouper.handle(.added(member("d", 150), chat, at: 0)) == [], "exactly 250 fits")
        #expect(grouper.handle(.added(member("big", 251), chat, at: 0)) == [.tooLarge(member("big", 251), chat)])
    }

    @Test func groupsAreKeptPerEndpointAndURL() {
        var grouper = LaneGrouper(limits: .init(maxRequests: 2))
        _ = grouper.handle(.added(member("a"), chat, at: 0))
        _ = grouper.handle(.added(member("b"), embeddings, at: 0))
        _ = grouper.handle(.added(member("c"), other, at: 0))
        #expect(grouper.waiting == 3)
        #expect(grouper.handle(.added(member("d"), embeddings, at: 0)) == [.send(embeddings, [member("b"), member("d")], .full)])
    }

    @Test func linesOfTwoBatchFilesAndRequestFilesAreNeverInOneGroup() {
        var grouper = LaneGrouper(limits: .init(maxRequests: 2))
        let first = LaneGrouper.Key(endpoint: "openai", url: "/v1/chat/completions", batch: "first")
        let second = LaneGrouper.Key(endpoint: "openai", url: "/v1/chat/completions", batch: "second")
        #expect(grouper.handle(.added(member("first#1"), first, at: 0)) == [])
        #expect(grouper.handle(.added(member("second#1"), second, at: 0)) == [])
        #expect(grouper.handle(.added(member("single"), chat, at: 0)) == [])
        #expect(grouper.waiting == 3)
        #expect(grouper.handle(.added(member("second#2"), second, at: 0)) == [.send(second, [member("second#1"), member("second#2")], .full)])
        #expect(grouper.handle(.added(member("other-single"), chat, at: 0)) == [.send(chat, [member("single"), member("other-single")], .full)])
        #expect(grouper.handle(.flush) == [.send(first, [member("first#1")], .flush)])
    }

    @Test func theOldestMemberLingersOutItsGroup() {
        var grouper = LaneGrouper(limits: .init(lingerSeconds: 60))
        _ = grouper.handle(.added(member("a"), chat, at: 10))
        _ = grouper.handle(.added(member("b"), other, at: 20))
        _ = grouper.handle(.added(member("c"), chat, at: 50))
        #expect(grouper.nextDeadline == 70)
        #expect(grouper.handle(.tick(now: 69.9)) == [])
        #expect(grouper.handle(.tick(now: 70)) == [.send(chat, [member("a"), member("c")], .linger)])
        #expect(grouper.nextDeadline == 80)
        #expect(grouper.handle(.added(member("d"), chat, at: 85)) == [.send(other, [member("b")], .linger)], "an add past a deadline sends too")
    }

    @Test func aRemovedMemberLeavesItsGroupAndAnEmptyGroupGoes() {
        var grouper = LaneGrouper(limits: .init(maxRequests: 2, maxBytes: 300))
        _ = grouper.handle(.added(member("a", 200), chat, at: 0))
        #expect(grouper.handle(.removed(id: "a")) == [.removed(id: "a", chat)])
        #expect(grouper.handle(.removed(id: "a")) == [], "removed once")
        #expect(grouper.nextDeadline == nil)
        _ = grouper.handle(.added(member("b", 200), chat, at: 5))
        #expect(grouper.handle(.added(member("c", 100), chat, at: 5)) == [.send(chat, [member("b", 200), member("c", 100)], .full)], "a's bytes no longer count")
    }

    @Test func aRequestSeenAgainIsNotAddedTwice() {
        var grouper = LaneGrouper(limits: .init(maxRequests: 2))
        _ = grouper.handle(.added(member("a"), chat, at: 0))
        #expect(grouper.handle(.added(member("a"), chat, at: 1)) == [])
        #expect(grouper.waiting == 1)
    }

    @Test func flushSendsEveryGroup() {
        var grouper = LaneGrouper()
        _ = grouper.handle(.added(member("a"), other, at: 0))
        _ = grouper.handle(.added(member("b"), chat, at: 0))
        #expect(grouper.handle(.flush) == [.send(chat, [member("b")], .flush), .send(other, [member("a")], .flush)])
        #expect(grouper.waiting == 0)
    }

    @Test func limitsAreClampedToSaneValues() {
        let limits = LaneGrouper.Limits(maxRequests: 0, maxBytes: -5, lingerSeconds: -1)
        #expect(limits.maxRequests == 1 && limits.maxBytes == 1 && limits.lingerSeconds == 0)
        #expect(LaneGrouper.Limits() == .init(maxRequests: 50_000, maxBytes: 200 * 1024 * 1024, lingerSeconds: 60))
    }

    @Test func aReloadReleasesWhatWaitsForAnEndpointThatNoLongerBatches() {
        var grouper = LaneGrouper(limits: .init(maxRequests: 10, maxBytes: 10_000, lingerSeconds: 60))
        _ = grouper.handle(.added(member("a"), chat, at: 0))
        _ = grouper.handle(.added(member("b"), other, at: 0))
        _ = grouper.handle(.added(member("c"), embeddings, at: 0))
        #expect(grouper.handle(.batching(endpoints: ["openai", "second"])).isEmpty, "both still batch")
        #expect(grouper.handle(.batching(endpoints: ["second"])) == [.unbatched(member("a"), chat), .unbatched(member("c"), embeddings)])
        #expect(grouper.waiting == 1)
        #expect(grouper.handle(.removed(id: "a")).isEmpty, "gone from the grouper")
        #expect(grouper.handle(.flush) == [.send(other, [member("b")], .flush)])
    }
}
