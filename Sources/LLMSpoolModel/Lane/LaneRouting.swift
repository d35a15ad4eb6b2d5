/// What the scheduler needs to send a request that may wait to the background lane: the
/// endpoints (by the scheduler's own indices), the config's default window and fallback,
/// and which requests the lane can carry at all. Pure.
public struct LaneRouting: Sendable, Equatable {
    /// Every configured endpoint, in the scheduler's order.
    public var endpoints: [LaneRouter.Endpoint]
    public var defaultWindow: String?
    public var fallback: LaneRouter.Fallback

    public init(endpoints: [LaneRouter.Endpoint] = [], defaultWindow: String? = nil, fallback: LaneRouter.Fallback = .live) {
        self.endpoints = endpoints
        self.defaultWindow = defaultWindow
        self.fallback = fallback
    }

    /// The lane of a task that arrived. Only a JSON request's first attempt is deferred:
    /// the batch APIs take a body copied from its file, not one made from a prompt file,
    /// and give no stream; a request that names its endpoint goes there live; and a retry
    /// (a failed batch line, a restart after attempts) goes through the live lane.
    public func route(_ task: TaskDescriptor) -> LaneRouter.Route {
        let summary = task.summary
        guard summary.format == JSONRequestFormat.id, !summary.stream, task.pinnedEndpoint == nil, summary.endpoint == nil,
              task.history.attempts.isEmpty else { return .live }
        // Only an endpoint of the request's own api can batch it: OpenAI's Batch API takes
        // chat, responses, completions and embeddings; Anthropic's Message Batches, Messages.
        let api = DialectRegistry.dialect(for: summary).api
        return LaneRouter.route(window: summary.completionWindow, defaultWindow: defaultWindow, api: api,
                                endpoints: endpoints, fallback: fallback)
    }

    /// The `no-endpoint` failure of a request that asked to wait when no endpoint batches it.
    public func noEndpointMessage(_ task: TaskDescriptor) -> String {
        let configured = endpoints.map { "\($0.name)\($0.batch ? " (batch)" : "")" }.joined(separator: ", ")
        return "the request may wait (completion_window \(task.summary.completionWindow ?? defaultWindow ?? "?")) but no endpoint "
            + "with \"batch\": true speaks \(DialectRegistry.dialect(for: task.summary).api.rawValue), and deferred_fallback is fail "
            + "(configured: \(configured))"
    }
}
