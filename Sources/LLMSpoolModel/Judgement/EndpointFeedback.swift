import FoundationEssentials

/// What the end of a transfer says about its endpoint's health.
public struct EndpointFeedback: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// The endpoint answered (2xx, or a client error that proves it is up).
        case answered
        /// A failure worth a retry: connection trouble, 408/409/429/5xx.
        case retryableFailure
        /// The transfer was stopped by us; says nothing about the endpoint.
        case neutral
    }

    public var outcome: Outcome
    /// Hold every request to this endpoint for this long (a 429's Retry-After, or an
    /// exhausted `x-ratelimit-remaining-*`).
    public var pauseSeconds: Double?
    /// Why the pause, for the people watching: the provider's own words for it.
    public var pauseCause: EndpointWait.Cause

    public init(_ outcome: Outcome, pauseSeconds: Double? = nil, pauseCause: EndpointWait.Cause = .retryAfter) {
        self.outcome = outcome
        self.pauseSeconds = pauseSeconds
        self.pauseCause = pauseCause
    }
}

extension EndpointFeedback {
    /// What an attempt's end says about its endpoint. Pure.
    public static func from(_ ending: AttemptEnding, headers: [String: String], now: Date) -> EndpointFeedback {
        switch ending {
        case .response(let status):
            let asked = RetryPolicy.requestedDelay(headers, now: now)
            if status == 429 {
                // Without a Retry-After, the used-up limit's own reset time says how long
                // (a second only when nothing says).
                if let asked { return EndpointFeedback(.retryableFailure, pauseSeconds: asked, pauseCause: .retryAfter) }
                return EndpointFeedback(.retryableFailure, pauseSeconds: exhaustedLimitReset(headers, now: now) ?? 1, pauseCause: .providerRateLimit)
            }
            if RetryPolicy.isRetryableStatus(status) { return EndpointFeedback(.retryableFailure, pauseSeconds: asked) }
            let reset = exhaustedLimitReset(headers, now: now)
            return EndpointFeedback(.answered, pauseSeconds: reset, pauseCause: reset == nil ? .retryAfter : .providerRateLimit)
        case .transportError(let code, _):
            return EndpointFeedback(RetryPolicy.permanentCurlCodes.contains(code) ? .neutral : .retryableFailure)
        case .timedOut:
            return EndpointFeedback(.retryableFailure)
        case .diskError, .cancelled, .responseTooLarge, .eventTooLarge, .headerTooLarge, .leaseLost, .crashLoop, .expired:
            return EndpointFeedback(.neutral)
        }
    }

    /// When the provider says a limit is used up, how long until it resets: OpenAI's
    /// `x-ratelimit-remaining-*` with a duration in `x-ratelimit-reset-*`, Anthropic's
    /// `anthropic-ratelimit-*-remaining` with an RFC 3339 time in `-reset`. The gate caps it.
    static func exhaustedLimitReset(_ headers: [String: String], now: Date) -> Double? {
        func exhausted(_ name: String) -> Bool {
            guard let remaining = headers[name].flatMap({ Double(TextEscaping.trimmed($0)) }) else { return false }
            return remaining <= 0
        }
        var pause: Double?
        for kind in ["requests", "tokens"] {
            guard exhausted("x-ratelimit-remaining-\(kind)"),
                  let reset = headers["x-ratelimit-reset-\(kind)"].flatMap(RetryPolicy.duration) else { continue }
            pause = max(pause ?? 0, reset)
        }
        for kind in ["requests", "tokens", "input-tokens", "output-tokens"] {
            guard exhausted("anthropic-ratelimit-\(kind)-remaining"),
                  let reset = headers["anthropic-ratelimit-\(kind)-reset"].flatMap(RFC3339Date.parse) else { continue }
            let wait = reset.timeIntervalSince(now)
            // A reset in the past (a skewed clock) is no pause; a far one is capped by the gate.
            guard wait.isFinite, wait > 0 else { continue }
            pause = max(pause ?? 0, wait)
        }
        return pause
    }
}
