/// One endpoint's admission state: its own concurrency, its request and token buckets,
/// provider-imposed pauses and a cool-down after repeated failures. Pure: time is passed in.
public struct EndpointGate: Sendable, Equatable {
    /// Whether a request may start on this endpoint now.
    public enum Readiness: Sendable, Equatable {
        case ready
        /// All its slots are taken; a transfer's end will free one.
        case full
        /// Rate-limited or paused by the provider until then.
        case waitUntil(Double)
        /// Failing, or paused by the provider for long (`EndpointWait.isPassedOver`):
        /// requests go to the next endpoint until then.
        case coolingDown(until: Double)
    }

    public let concurrency: Int
    /// The endpoint's name and protocol family: a request is admitted only by gates whose
    /// `api` serves its dialect, and the name is what a request no gate serves is told.
    public let name: String
    public let api: EndpointAPI
    public let cooldownAfterFailures: Int
    public let cooldownSeconds: Double
    /// The longest pause a provider may impose on the whole endpoint (`max_retry_after_seconds`):
    /// one answer asking for a day must not stop every request for a day.
    public let maxPauseSeconds: Double
    /// Streams one connection carries when the endpoint multiplexes (HTTP/2); nil when each
    /// transfer has a connection of its own. See `ConnectionPacing`.
    public let streamsPerConnection: Int?
    public private(set) var active = 0
    public private(set) var pausedUntil = 0.0
    public private(set) var coolingUntil = 0.0
    public private(set) var consecutiveFailures = 0
    /// Why `pausedUntil`, and how many failures started the cool-down: for `wait(now:)`.
    public private(set) var pauseCause = EndpointWait.Cause.retryAfter
    public private(set) var cooledAfterFailures = 0
    private var requests: TokenBucket?
    private var tokens: TokenBucket?

    public init(concurrency: Int, requestsPerMinute: Double? = nil, tokensPerMinute: Double? = nil,
                cooldownAfterFailures: Int = 3, cooldownSeconds: Double = 30, maxPauseSeconds: Double = 3600, active: Int = 0,
                name: String = "default", api: EndpointAPI = .openai, streamsPerConnection: Int? = nil, now: Double) {
        self.name = name
        self.streamsPerConnection = streamsPerConnection.map { max(1, $0) }
        self.api = api
        self.maxPauseSeconds = maxPauseSeconds.isFinite ? max(0, maxPauseSeconds) : 3600
        self.concurrency = max(1, concurrency)
        self.active = active
        self.cooldownAfterFailures = max(1, cooldownAfterFailures)
        self.cooldownSeconds = cooldownSeconds
        if let requestsPerMinute, requestsPerMinute > 0 { requests = TokenBucket(perMinute: requestsPerMinute, now: now) }
        if let tokensPerMinute, tokensPerMinute > 0 { tokens = TokenBucket(perMinute: tokensPerMinute, now: now) }
    }

    /// `ignoringCooldown`: for a task a person asked to send now, which passes the cool-down
    /// (the daemon's own caution) but not the provider's pause or the endpoint's limits.
    public mutating func readiness(estimatedTokens: Int, now: Double, ignoringCooldown: Bool = false) -> Readiness {
        if coolingUntil > now && !ignoringCooldown { return .coolingDown(until: coolingUntil) }
        if pausedUntil > now {
            let wait = EndpointWait(cause: pauseCause, until: pausedUntil)
            return wait.isPassedOver(now: now) ? .coolingDown(until: pausedUntil) : .waitUntil(pausedUntil)
        }
        if active >= concurrency { return .full }
        var wait = 0.0
        if requests != nil { wait = max(wait, requests!.wait(for: 1, now: now)) }
        if tokens != nil { wait = max(wait, tokens!.wait(for: Double(estimatedTokens), now: now)) }
        return wait > 0 ? .waitUntil(now + wait) : .ready
    }

    public mutating func admit(estimatedTokens: Int, now: Double) {
        active += 1
        requests?.take(1, now: now)
        tokens?.take(Double(estimatedTokens), now: now)
    }

    public mutating func release(_ feedback: EndpointFeedback, now: Double) {
        active = max(0, active - 1)
        if let pause = EndpointGate.capped(feedback.pauseSeconds, limit: maxPauseSeconds), now + pause > pausedUntil {
            pausedUntil = now + pause
            pauseCause = feedback.pauseCause
        }
        switch feedback.outcome {
        case .answered:
            consecutiveFailures = 0
        case .retryableFailure:
            consecutiveFailures += 1
            if consecutiveFailures >= cooldownAfterFailures {
                coolingUntil = now + cooldownSeconds
                cooledAfterFailures = consecutiveFailures
                consecutiveFailures = 0
            }
        case .neutral:
            break
        }
    }

    /// Why this endpoint takes no request now, or nil when it could (it may still be full).
    /// Asks the buckets without taking from them.
    public func wait(now: Double, estimatedTokens: Int = 1) -> EndpointWait? {
        if coolingUntil > now { return EndpointWait(cause: .coolingDown, until: coolingUntil, failures: cooledAfterFailures) }
        if pausedUntil > now { return EndpointWait(cause: pauseCause, until: pausedUntil) }
        var requests = self.requests
        var tokens = self.tokens
        let wait = max(requests?.wait(for: 1, now: now) ?? 0, tokens?.wait(for: Double(estimatedTokens), now: now) ?? 0)
        return wait > 0 ? EndpointWait(cause: .ownRateLimit, until: now + wait) : nil
    }

    /// A provider's pause bounded by `limit`; nil when there is none worth keeping (absent,
    /// zero, negative or not a number).
    public static func capped(_ pause: Double?, limit: Double) -> Double? {
        guard let pause, pause > 0 else { return nil }
        return min(pause, limit)
    }
}
