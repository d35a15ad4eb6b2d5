/// Which lane a request takes: the provider's Batch API when it may wait and an endpoint
/// serves the lane, else the live lane, or a failure when the config forbids the fallback. Pure.
public enum LaneRouter {
    /// The only window the providers offer today; any other value is not a deferral.
    public static let deferredWindow = "24h"

    /// What the config says about one endpoint, as far as the lane cares.
    public struct Endpoint: Sendable, Equatable {
        public var name: String
        /// `"batch": true` in the endpoint's config.
        public var batch: Bool
        /// The batch API it speaks.
        public var api: EndpointAPI

        public init(name: String, batch: Bool, api: EndpointAPI = .openai) {
            self.name = name
            self.batch = batch
            self.api = api
        }
    }

    /// What happens to a deferrable request that no endpoint can take (`deferred_fallback`).
    public enum Fallback: String, Sendable, CaseIterable {
        case live, fail
    }

    public enum Route: Sendable, Equatable {
        case live
        /// Through the batch API of `endpoints[endpoint]`.
        case deferred(endpoint: Int)
        /// Fails with `no-endpoint`: the request asked to wait and nothing can batch it.
        case noEndpoint

        public var isDeferred: Bool {
            if case .deferred = self { true } else { false }
        }
    }

    /// `window` is the request's own `completion_window` (nil when it has none); the
    /// config's `default_completion_window` applies only then, so a request can still say
    /// it cannot wait by naming another window.
    public static func route(window: String?, defaultWindow: String?, api: EndpointAPI,
                             endpoints: [Endpoint], fallback: Fallback) -> Route {
        guard (window ?? defaultWindow) == deferredWindow else { return .live }
        if let index = endpoints.firstIndex(where: { $0.batch && $0.api == api }) { return .deferred(endpoint: index) }
        switch fallback {
        case .live: return .live
        case .fail: return .noEndpoint
        }
    }
}
