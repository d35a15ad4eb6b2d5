import Testing
@testable import LLMSpoolModel

/// Which requests an endpoint's wait holds, until when, and how that is said: the rule the
/// scheduler applies, judged from outside it.
@Suite struct RequestWaitJudgeTests {
    let time: (Double) -> String = { "t\(Int($0))" }

    func view(_ name: String, _ api: EndpointAPI = .openai, concurrency: Int = 4, inFlight: Int = 0) -> RequestWaitJudge.EndpointView {
        RequestWaitJudge.EndpointView(name: name, api: api, concurrency: concurrency, inFlight: inFlight)
    }

    func view(_ name: String, _ wait: EndpointWait) -> RequestWaitJudge.EndpointView {
        RequestWaitJudge.EndpointView(name: name, api: .openai, concurrency: 4, inFlight: 0, wait: wait)
    }

    func judge(own: Double? = nil, error: String? = nil, need: RequestWaitJudge.Need = .init(), _ endpoints: [RequestWaitJudge.EndpointView],
               slots: RequestWaitJudge.Slots? = nil, now: Double = 100) -> RequestWaitJudge.Verdict {
        RequestWaitJudge.judge(ownNotBefore: own, lastError: error, need: need, endpoints: endpoints, slots: slots, now: now, time: time)
    }

    @Test func nothingHoldsARequestOnAFreeEndpoint() {
        #expect(judge([view("a")]) == .init(waiting: false))
        #expect(judge([]) == .init(waiting: false), "no daemon: nothing is known to hold it")
    }

    @Test func aCoolDownHoldsItUntilItEnds() {
        let verdict = judge([view("openai", EndpointWait(cause: .coolingDown, until: 130, failures: 3))])
        #expect(verdict.waiting && verdict.nextAttempt == 130)
        #expect(verdict.reason == "endpoint openai cooling down until t130 (3 failures in a row)")
        #expect(verdict.holdingReason == verdict.reason)
    }

    @Test func theLaterOfItsOwnBackOffAndTheCoolDownIsTheNextAttempt() {
        let cooling = view("openai", EndpointWait(cause: .coolingDown, until: 130, failures: 3))
        let shorter = judge(own: 102, error: "refused", [cooling])
        #expect(shorter.nextAttempt == 130, "the cool-down outlasts the back-off")
        #expect(shorter.reason == "next attempt at t102 after: refused; endpoint openai cooling down until t130 (3 failures in a row)")
        #expect(shorter.holdingReason == "endpoint openai cooling down until t130 (3 failures in a row)")
        let longer = judge(own: 200, error: "refused", [cooling])
        #expect(longer.nextAttempt == 200, "a pause ending first does not hold it longer")
        #expect(longer.reason == "next attempt at t200 after: refused; endpoint openai cooling down until t130 (3 failures in a row)",
                "but it is why the endpoint takes nothing now")
    }

    @Test func aPastBackOffIsNoWait() {
        #expect(judge(own: 50, error: "x", [view("a")]) == .init(waiting: false))
    }

    @Test func aCoolingEndpointIsPassedOverForTheNext() {
        let verdict = judge([view("a", EndpointWait(cause: .coolingDown, until: 130, failures: 3)), view("b")])
        #expect(!verdict.waiting, "b takes it")
    }

    @Test func whenEveryEndpointCoolsDownTheEarliestEndIsTheNextAttempt() {
        let verdict = judge([view("a", EndpointWait(cause: .coolingDown, until: 150, failures: 3)),
                             view("b", EndpointWait(cause: .coolingDown, until: 120, failures: 5))])
        #expect(verdict.nextAttempt == 120)
        #expect(verdict.reason == "endpoint a cooling down until t150 (3 failures in a row); endpoint b cooling down until t120 (5 failures in a row)")
    }

    @Test func aPauseOfTheFirstEndpointHoldsItWithoutFallingBack() {
        let verdict = judge([view("a", EndpointWait(cause: .retryAfter, until: 140)), view("b")])
        #expect(verdict.waiting && verdict.nextAttempt == 140)
        #expect(verdict.reason == "endpoint a paused by Retry-After until t140")
        let passed = judge([view("a", EndpointWait(cause: .coolingDown, until: 110, failures: 3)), view("b", EndpointWait(cause: .retryAfter, until: 140))])
        #expect(passed.nextAttempt == 110, "a becomes usable first")
        #expect(passed.reason == "endpoint a cooling down until t110 (3 failures in a row); endpoint b paused by Retry-After until t140")
    }

    /// A provider's pause longer than a minute is passed over as a cool-down is: one answer
    /// asking for an hour held every new request for that hour beside a healthy fallback.
    @Test func aLongPauseOfTheFirstEndpointIsPassedOverForTheNext() {
        let long = EndpointWait(cause: .retryAfter, until: 100 + EndpointWait.passOverSeconds + 1)
        #expect(!judge([view("a", long), view("b")]).waiting, "b takes it")
        let limit = EndpointWait(cause: .providerRateLimit, until: 100 + 3600)
        #expect(!judge([view("a", limit), view("b")]).waiting, "b takes it")
        let both = judge([view("a", long), view("b", EndpointWait(cause: .retryAfter, until: 100 + 7200))])
        #expect(both.waiting && both.nextAttempt == long.until, "every one paused for long: the earliest end")
        let own = EndpointWait(cause: .ownRateLimit, until: 100 + 3600)
        #expect(judge([view("a", own), view("b")]).waiting, "its own rate limit is waited for")
    }

    @Test func theRequestsPreferredEndpointIsTriedFirst() {
        let endpoints = [view("a"), view("b", EndpointWait(cause: .retryAfter, until: 140))]
        #expect(judge(need: .init(preferred: 1), endpoints).nextAttempt == 140)
        #expect(!judge(need: .init(preferred: 0), endpoints).waiting)
        #expect(judge(need: .init(preferred: -7), endpoints).waiting, "a negative preference from a record wraps, as in the scheduler")
    }

    @Test func onlyEndpointsOfItsApiCount() {
        let endpoints = [view("oa", EndpointWait(cause: .retryAfter, until: 140)), view("an", .anthropic)]
        #expect(!judge(need: .init(api: .anthropic), endpoints).waiting, "the openai endpoint's pause does not hold a Messages request")
        #expect(judge(need: .init(api: .openai), endpoints).waiting)
        #expect(judge(need: .init(api: nil), endpoints).waiting, "not read: every endpoint counts")
    }

    @Test func aPinnedRequestWaitsForItsEndpointOnly() {
        let endpoints = [view("a"), view("b", EndpointWait(cause: .coolingDown, until: 130, failures: 3))]
        #expect(judge(need: .init(pinned: "b"), endpoints).nextAttempt == 130)
        #expect(!judge(need: .init(pinned: "a"), endpoints).waiting)
    }

    @Test func fullSlotsAreAReasonButNotAWait() {
        let daemonFull = judge([view("a")], slots: .init(concurrency: 8, inFlight: 8))
        #expect(!daemonFull.waiting && daemonFull.nextAttempt == nil)
        #expect(daemonFull.reason == "waiting for a free slot (8 in flight, concurrency 8)")
        let endpointFull = judge([view("a", concurrency: 2, inFlight: 2)], slots: .init(concurrency: 8, inFlight: 2))
        #expect(endpointFull.reason == "waiting for a free slot on endpoint a (2 in flight, its concurrency 2)")
        #expect(judge([view("a", concurrency: 2, inFlight: 1)], slots: .init(concurrency: 8, inFlight: 1)).reason == nil)
    }

    @Test func aWaitAlreadyOverHoldsNothing() {
        #expect(!judge([view("a", EndpointWait(cause: .retryAfter, until: 90))]).waiting)
    }
}
