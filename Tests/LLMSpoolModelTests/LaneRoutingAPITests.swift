import Foundation
import Testing
@testable import LLMSpoolModel

/// Which batch endpoint a request that may wait goes to: only one of its own api, so a
/// Messages request never reaches OpenAI's Batch API and a chat request never Anthropic's.
@Suite struct LaneRoutingAPITests {
    let openAIBatch = LaneRouter.Endpoint(name: "openai", batch: true, api: .openai)
    let anthropicBatch = LaneRouter.Endpoint(name: "messages-batch", batch: true, api: .anthropic)
    let anthropicLive = LaneRouter.Endpoint(name: "messages-live", batch: false, api: .anthropic)

    func task(_ dialect: String, window: String? = "24h") -> TaskDescriptor {
        var summary = RequestSummary(model: "m", stream: false, size: 10)
        summary.dialect = dialect
        summary.completionWindow = window
        return TaskDescriptor(id: "t", requestPath: "/s/outgoing/t.json", summary: summary, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 0)))
    }

    @Test func aMessagesRequestThatMayWaitGoesToTheAnthropicBatchEndpoint() {
        let routing = LaneRouting(endpoints: [openAIBatch, anthropicLive, anthropicBatch])
        #expect(routing.route(task(MessagesDialect.id)) == .deferred(endpoint: 2))
        #expect(routing.route(task(MessagesDialect.id, window: nil)) == .live, "no window, no default: live")
        #expect(LaneRouting(endpoints: [anthropicBatch], defaultWindow: "24h").route(task(MessagesDialect.id, window: nil)) == .deferred(endpoint: 0))
    }

    @Test func aMessagesRequestWithOnlyAnOpenAIBatchEndpointGoesLiveOrFails() {
        #expect(LaneRouting(endpoints: [openAIBatch, anthropicLive]).route(task(MessagesDialect.id)) == .live)
        let strict = LaneRouting(endpoints: [openAIBatch, anthropicLive], fallback: .fail)
        #expect(strict.route(task(MessagesDialect.id)) == .noEndpoint)
        #expect(strict.noEndpointMessage(task(MessagesDialect.id)).contains("speaks anthropic"))
    }

    @Test func aChatRequestNeverGoesToAnAnthropicBatchEndpoint() {
        #expect(LaneRouting(endpoints: [anthropicBatch]).route(task(ChatCompletionsDialect.id)) == .live)
        #expect(LaneRouting(endpoints: [anthropicBatch], fallback: .fail).route(task(ChatCompletionsDialect.id)) == .noEndpoint)
        #expect(LaneRouting(endpoints: [anthropicBatch, openAIBatch]).route(task(ChatCompletionsDialect.id)) == .deferred(endpoint: 1))
    }
}
