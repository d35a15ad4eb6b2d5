/// Why an endpoint takes no request now, and until when: what `status`, `show`, `queue`,
/// the log and `submit --wait` say instead of a bare "queued".
public struct EndpointWait: Sendable, Equatable {
    public enum Cause: String, Sendable, Equatable {
        /// Too many failures in a row: requests go elsewhere (or wait) until the cool-down ends.
        case coolingDown = "cooling-down"
        /// The provider asked for a pause (`Retry-After`, `retry-after-ms`).
        case retryAfter = "retry-after"
        /// The provider's rate limit is used up (a 429 without a time, `x-ratelimit-*`).
        case providerRateLimit = "rate-limit"
        /// The endpoint's own `requests_per_minute` or `tokens_per_minute`.
        case ownRateLimit = "own-rate-limit"
    }

    /// A provider's pause longer than this is passed over for the request's next endpoint,
    /// as a cool-down is; a shorter one is waited for (a fallback is for an endpoint that
    /// is down, not for a second's breath). One answer asking for an hour (`Retry-After:
    /// 99999`, a date in 9999) no longer holds every request for an hour beside a fallback.
    public static let passOverSeconds = 60.0

    /// Whether a request passes this endpoint over for its next one (it waits for the
    /// earliest to end when it passes every one over): a cool-down, or a provider's pause
    /// past `passOverSeconds`. The endpoint's own rate limit is always waited for.
    public func isPassedOver(now: Double) -> Bool {
        switch cause {
        case .coolingDown: true
        case .retryAfter, .providerRateLimit: until - now > Self.passOverSeconds
        case .ownRateLimit: false
        }
    }

    public var cause: Cause
    /// Seconds since 1970.
    public var until: Double
    /// For a cool-down: the failures in a row that started it.
    public var failures: Int?

    public init(cause: Cause, until: Double, failures: Int? = nil) {
        self.cause = cause
        self.until = until
        self.failures = failures
    }

    /// One line for a person, such as "endpoint openai cooling down until 07:58:34 (3
    /// failures in a row)"; `time` formats `until`.
    public func describe(endpoint: String, time: (Double) -> String) -> String {
        let when = time(until)
        switch cause {
        case .coolingDown:
            let count = failures.map { " (\($0) failure\($0 == 1 ? "" : "s") in a row)" } ?? ""
            return "endpoint \(endpoint) cooling down until \(when)\(count)"
        case .retryAfter:
            return "endpoint \(endpoint) paused by Retry-After until \(when)"
        case .providerRateLimit:
            return "endpoint \(endpoint) paused by the provider's rate limit until \(when)"
        case .ownRateLimit:
            return "endpoint \(endpoint) at its requests_per_minute/tokens_per_minute until \(when)"
        }
    }
}
