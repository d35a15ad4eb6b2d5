import Foundation
import Testing
@testable import LLMSpoolCore

/// The background lane's settings: read, defaulted, and every bad value named with its
/// file and key.
@Suite struct LaneConfigTests {
    @Test func theLanesKeysAreReadAndDefaultToTheProvidersLimits() throws {
        #expect(Config().batchLimits == LaneGrouper.Limits(maxRequests: 50_000, maxBytes: 200 * 1024 * 1024, lingerSeconds: 60))
        #expect(Config().deferredFallback == .live && Config().defaultCompletionWindow == nil)
        #expect(Config().retry.deferredExpired == .live)
        let config = try Config.parse(Array(#"""
            {"default_completion_window": "24h", "deferred_fallback": "fail", "deferred_expired": "fail", "batch_max_requests": 10, "batch_max_bytes": 4096,
             "batch_linger_seconds": 2.5, "batch_poll_seconds": 5, "batch_poll_max_seconds": 50,
             "endpoints": [{"name": "b", "base_url": "http://127.0.0.1:1/v1", "batch": true}, {"name": "l", "base_url": "http://127.0.0.1:2/v1"}]}
            """#.utf8), source: "lane.json")
        #expect(config.defaultCompletionWindow == "24h")
        #expect(config.deferredFallback == .fail)
        #expect(config.retry.deferredExpired == .fail)
        #expect(config.batchLimits == LaneGrouper.Limits(maxRequests: 10, maxBytes: 4096, lingerSeconds: 2.5))
        #expect(config.batchPollSeconds == 5 && config.batchPollMaxSeconds == 50)
        #expect(config.endpoints.map(\.batch) == [true, false])
        let endpoints = try config.resolvedEndpoints(environment: [:])
        #expect(endpoints.map(\.batch) == [true, false])
    }

    @Test func anAnthropicEndpointServesTheLaneThroughMessageBatches() throws {
        let config = try Config.parse(Array(#"{"endpoints": [{"name": "messages-batch", "base_url": "http://127.0.0.1:1", "api": "anthropic", "batch": true}]}"#.utf8),
                                      source: "lane.json")
        let endpoints = try config.resolvedEndpoints(environment: [:])
        #expect(endpoints.map(\.batch) == [true] && endpoints.map(\.api) == [.anthropic])
        let error = #expect(throws: ConfigError.self) {
            try Config.parse(Array(#"{"endpoints": [{"base_url": "http://h", "api": "anthropic", "model": "m", "batch": true}]}"#.utf8), source: "lane.json")
        }
        #expect(error?.message.contains(#"endpoints[0]: "batch": true cannot go with "model""#) == true, "\(error?.message ?? "")")
    }

    @Test(arguments: [
        (#"{"default_completion_window": "1h"}"#, #"lane.json: "default_completion_window" must be "24h""#),
        (#"{"deferred_fallback": "later"}"#, #"lane.json: "deferred_fallback" must be live or fail, not "later""#),
        (#"{"deferred_expired": "retry"}"#, #"lane.json: "deferred_expired" must be live or fail, not "retry""#),
        (#"{"deferred_expired": 1}"#, #"lane.json: "deferred_expired""#),
        (#"{"batch_max_requests": 50001}"#, #"lane.json: "batch_max_requests" must be from 1 to 50000"#),
        (#"{"batch_max_requests": 1.5}"#, #""batch_max_requests" must be a whole number"#),
        (#"{"batch_max_bytes": 209715201}"#, #""batch_max_bytes" must be from 1024 to 209715200"#),
        (#"{"batch_linger_seconds": -1}"#, #""batch_linger_seconds" must be from 0"#),
        (#"{"batch_poll_seconds": 0}"#, #""batch_poll_seconds" must be from 1"#),
        (#"{"batch_poll_seconds": 60, "batch_poll_max_seconds": 30}"#, #""batch_poll_max_seconds" (30) must not be less than "batch_poll_seconds" (60)"#),
        (#"{"endpoints": [{"base_url": "http://h/v1", "batch": "yes"}]}"#, #"lane.json: endpoints[0]: "batch" must be true or false"#),
        (#"{"endpoints": [{"base_url": "http://h/v1", "model": "m", "batch": true}]}"#, #"endpoints[0]: "batch": true cannot go with "model""#),
    ])
    func badLaneSettingsAreNamed(text: String, mention: String) {
        let error = #expect(throws: ConfigError.self) { try Config.parse(Array(text.utf8), source: "lane.json") }
        #expect(error?.message.contains(mention) == true, "\(error?.message ?? "")")
    }
}
