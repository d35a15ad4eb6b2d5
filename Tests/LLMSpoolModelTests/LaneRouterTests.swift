import Testing
@testable import LLMSpoolModel

@Suite struct LaneRouterTests {
    let live = LaneRouter.Endpoint(name: "live", batch: false)
    let batch = LaneRouter.Endpoint(name: "batch", batch: true)
    let anthropic = LaneRouter.Endpoint(name: "anthropic", batch: true, api: .anthropic)

    @Test func aRequestThatMayWaitGoesToTheFirstBatchEndpointOfItsAPI() {
        #expect(LaneRouter.route(window: "24h", defaultWindow: nil, api: .openai, endpoints: [live, anthropic, batch], fallback: .live) == .deferred(endpoint: 2))
        #expect(LaneRouter.route(window: "24h", defaultWindow: nil, api: .anthropic, endpoints: [live, batch, anthropic], fallback: .live) == .deferred(endpoint: 2))
    }

    @Test func theConfigsDefaultWindowAppliesOnlyToRequestsWithoutOne() {
        #expect(LaneRouter.route(window: nil, defaultWindow: "24h", api: .openai, endpoints: [batch], fallback: .live) == .deferred(endpoint: 0))
        #expect(LaneRouter.route(window: "now", defaultWindow: "24h", api: .openai, endpoints: [batch], fallback: .live) == .live)
        #expect(LaneRouter.route(window: nil, defaultWindow: nil, api: .openai, endpoints: [batch], fallback: .fail) == .live)
        #expect(LaneRouter.route(window: "1h", defaultWindow: nil, api: .openai, endpoints: [batch], fallback: .fail) == .live)
    }

    @Test func withoutABatchEndpointTheFallbackDecides() {
        #expect(LaneRouter.route(window: "24h", defaultWindow: nil, api: .openai, endpoints: [live, anthropic], fallback: .live) == .live)
        #expect(LaneRouter.route(window: "24h", defaultWindow: nil, api: .openai, endpoints: [live, anthropic], fallback: .fail) == .noEndpoint)
        #expect(LaneRouter.route(window: "24h", defaultWindow: nil, api: .openai, endpoints: [], fallback: .fail) == .noEndpoint)
    }
}
