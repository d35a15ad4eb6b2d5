import Testing
@testable import LLMSpoolModel

@Suite struct StalledStreamWatchTests {
    @Test func aTransferIsLookedAtOnlyOnceQuietAndAtMostOnceASecond() {
        var watch = StalledStreamWatch()
        #expect(!watch.isDue(now: 10, quietSeconds: 5, receivedAny: false), "nothing received: it may still be connecting or uploading")
        #expect(!watch.isDue(now: 10, quietSeconds: 0.9, receivedAny: true))
        #expect(watch.isDue(now: 10, quietSeconds: 1, receivedAny: true))
        _ = watch.look(now: 10, hasConnection: true, multiplexed: true)
        #expect(!watch.isDue(now: 10.5, quietSeconds: 1.5, receivedAny: true))
        #expect(watch.isDue(now: 11, quietSeconds: 2, receivedAny: true))
    }

    @Test func aQuietMultiplexedStreamHasItsConnectionRunAndAnHTTP1OneIsLeft() {
        var watch = StalledStreamWatch()
        #expect(watch.look(now: 10, hasConnection: true, multiplexed: true) == .kick)
        #expect(watch.look(now: 11, hasConnection: true, multiplexed: true) == .kick)
        var plain = StalledStreamWatch()
        #expect(plain.look(now: 10, hasConnection: true, multiplexed: false) == .nothing)
    }

    @Test func aTransferWithoutAConnectionEndsAfterASecondOfIt() {
        var watch = StalledStreamWatch()
        #expect(watch.look(now: 10, hasConnection: false, multiplexed: true) == .nothing, "once may be a reconnect")
        #expect(watch.look(now: 10.5, hasConnection: false, multiplexed: true) == .nothing)
        #expect(watch.look(now: 11, hasConnection: false, multiplexed: true) == .end)
        var back = StalledStreamWatch()
        _ = back.look(now: 10, hasConnection: false, multiplexed: false)
        #expect(back.look(now: 10.5, hasConnection: true, multiplexed: false) == .nothing)
        #expect(back.look(now: 11.5, hasConnection: false, multiplexed: false) == .nothing, "the second second starts again")
        #expect(back.look(now: 12.5, hasConnection: false, multiplexed: false) == .end, "an HTTP/1.1 transfer without a connection ends too")
    }
}

