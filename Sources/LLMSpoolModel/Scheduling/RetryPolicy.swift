import FoundationEssentials

/// The retry settings, with the defaults of the README's retry table.
public struct RetrySettings: Sendable, Equatable {
    /// Attempts in all, the first included.
    public var maxAttempts = 10
    public var initialBackoffSeconds = 0.5
    public var maxBackoffSeconds = 60.0
    /// Each backoff is shortened by up to this fraction at random, so that clients spread out.
    public var jitter = 0.25
    /// The longest Retry-After honoured; a provider asking for more fails the request.
    public var maxRetryAfterSeconds = 3600.0
    /// After this long since the request was first seen, no new attempt starts.
    public var maxLifetimeSeconds = 86_400.0
    /// A request whose remote batch expired before it ran: sent live, or failed (`deferred_expired`).
    public var deferredExpired = DeferredExpiry.live

    public init() {}
}

/// Whether and when to try again. Pure: a failed attempt, its headers and the history in;
/// a decision out. The rule is openai-python's, made durable.
public enum RetryPolicy {
    public enum Decision: Sendable, Equatable {
        case retry(afterSeconds: Double, reason: AttemptFailure.Kind)
        case giveUp(GiveUp)
    }

    /// Why no further attempt is made. Each case is a rule of the retry table.
    public enum GiveUp: Sendable, Equatable, CustomStringConvertible {
        /// The failure is permanent (a 4xx other than 408/409/429, a bad URL, `x-should-retry: false`).
        case notRetryable
        /// `max_attempts` attempts that reached for the endpoint have been made.
        case attemptsExhausted(attempts: Int)
        /// The provider asked for a wait longer than `max_retry_after_seconds`.
        case retryAfterTooLong(askedSeconds: Double, limitSeconds: Double)
        /// The next attempt would start past `max_lifetime_seconds`.
        case lifetimeExceeded(ageSeconds: Double, limitSeconds: Double)
        /// The spool's disk stayed unwritable past `max_lifetime_seconds`.
        case diskStayedFull
        /// The answer came and could not be written, `attempts` times in a row: each was paid
        /// for, and the room a probe write finds is not room for the answer (or something in
        /// the way of its name, a folder at `<id>.partial`, is still there). The record gives
        /// the last failure's own words before it, which tell the two apart.
        case answerDidNotFit(attempts: Int)
        /// A remote batch expired before the request ran, and `deferred_expired` is `fail`.
        case expiredNotLive

        public var description: String {
            switch self {
            case .notRetryable:
                "not retryable"
            case .attemptsExhausted(let attempts):
                "gave up after \(attempts) attempts (max_attempts)"
            case .retryAfterTooLong(let asked, let limit):
                "the provider asked to wait \(RetryPolicy.wholeSeconds(asked)) s, more than max_retry_after_seconds (\(RetryPolicy.wholeSeconds(limit)))"
            case .lifetimeExceeded(let age, let limit):
                "the next attempt would start \(RetryPolicy.wholeSeconds(age)) s after the request was first seen, past max_lifetime_seconds (\(RetryPolicy.wholeSeconds(limit)))"
            case .diskStayedFull:
                "the disk stayed full past max_lifetime_seconds"
            case .answerDidNotFit(let attempts):
                "the answer could not be written to the spool \(attempts) times in a row, each after part of it had arrived (a full disk, or a file or folder in the way of its name); each was paid for, so it is not sent again"
            case .expiredNotLive:
                "deferred_expired is fail"
            }
        }
    }

    /// What the finisher does after a failed attempt: the whole retry table, the disk rule
    /// and the endpoint rotation in one decision.
    public enum Plan: Sendable, Equatable {
        /// Try again after the delay, preferring `endpoint` (an index into the configured list).
        case retry(afterSeconds: Double, endpoint: Int, reason: AttemptFailure.Kind)
        case giveUp(GiveUp)
    }

    /// Full-disk failures in a row after the answer had begun to arrive, after which the
    /// request fails: a disk failure uses up no attempt, and an answer larger than the free
    /// space was otherwise paid for again and again.
    public static let maximumPaidDiskFailures = 3

    /// libcurl codes that no retry can fix: bad URL, unsupported protocol, bad TLS set-up.
    /// Not 77, a CA file that cannot be read: checked at start, so at run time it is one
    /// being replaced (a CA rotation by rm and cp), which a retry outlives.
    static let permanentCurlCodes: Set<Int32> = [1, 2, 3, 4, 27, 43, 48, 58, 60]

    /// The next step for a task whose latest attempt (the last of `history.attempts`) failed.
    /// A full disk is the machine's trouble, not the request's: it uses up no attempts, only
    /// the lifetime, and keeps the endpoint. Any other failure moves on to the next endpoint.
    /// `carriers`: how many endpoints could carry the request (`carriers(pinned:api:endpointAPIs:)`).
    public static func plan(_ failure: AttemptFailure, headers: [String: String], history: TaskHistory, endpointIndex: Int,
                            endpointCount: Int, carriers: Int, now: Date, settings: RetrySettings, random: Double) -> Plan {
        if failure.kind == .disk {
            let paid = history.attempts.reversed().prefix { $0.outcome == AttemptFailure.Kind.disk.rawValue }.filter { $0.bytesReceived > 0 }.count
            if paid >= maximumPaidDiskFailures { return .giveUp(.answerDidNotFit(attempts: paid)) }
            let delay = backoff(afterAttempts: history.attempts.count, settings: settings, random: random)
            guard now.timeIntervalSince(history.firstSeen) + delay <= settings.maxLifetimeSeconds else { return .giveUp(.diskStayedFull) }
            return .retry(afterSeconds: delay, endpoint: endpointIndex, reason: .disk)
        }
        if failure.kind == .expired {
            // The request never reached the model: going live is its first real attempt, so
            // neither max_attempts nor max_lifetime_seconds (which the 24h window may have
            // used up) holds it back; the attempts after it follow the usual rules.
            guard settings.deferredExpired == .live else { return .giveUp(.expiredNotLive) }
            return .retry(afterSeconds: 0, endpoint: endpointIndex, reason: .expired)
        }
        let counted = countedAttempts(history)
        // With another endpoint that could carry it, the wait a provider asks for is its endpoint's (the
        // scheduler pauses it, and passes a long pause over): the request goes on to the next
        // one after the usual back-off, even when the wait asked is past
        // max_retry_after_seconds. Before, it waited out the pause, or failed without
        // trying the fallback at all.
        var judged = headers
        if carriers > 1 {
            judged["retry-after"] = nil
            judged["retry-after-ms"] = nil
        }
        switch decide(failure, headers: judged, attempts: counted, firstSeen: history.firstSeen, now: now, settings: settings, random: random) {
        case .retry(let delay, let reason):
            let next = endpointCount > 1 ? (max(0, endpointIndex) + 1) % endpointCount : 0
            return .retry(afterSeconds: delay, endpoint: next, reason: reason)
        case .giveUp(let reason):
            return .giveUp(reason)
        }
    }

    /// The endpoints that could carry a request, as the scheduler chooses them: the one it
    /// names, or every endpoint of its dialect's api.
    public static func carriers(pinned: Bool, api: EndpointAPI, endpointAPIs: [EndpointAPI]) -> Int {
        pinned ? 1 : endpointAPIs.count { $0 == api }
    }

    /// The attempts of a history that use up `max_attempts`: a full disk's do not.
    public static func countedAttempts(_ history: TaskHistory) -> Int {
        history.attempts.filter { $0.outcome != AttemptFailure.Kind.disk.rawValue && $0.outcome != AttemptFailure.Kind.expired.rawValue }.count
    }

    public static func isRetryable(_ failure: AttemptFailure, headers: [String: String]) -> Bool {
        // No retry brings a missing or refused key, whatever x-should-retry says.
        if isAuthenticationFailure(failure) { return false }
        // No header of the endpoint can make the daemon's own verdicts retryable.
        if failure.kind == .invalidRequest || failure.kind == .crashLoop || failure.kind == .noEndpoint || failure.kind == .expired { return false }
        if let verdict = headers["x-should-retry"]?.lowercased() {
            if verdict == "true" { return true }
            if verdict == "false" { return false }
        }
        switch failure.kind {
        case .transport:
            return !permanentCurlCodes.contains(failure.curlCode ?? 0)
        case .http:
            return isRetryableStatus(failure.httpStatus ?? 0)
        case .providerError:
            // An error inside a 200: permanent only when it carries a client-error code.
            if let code = failure.embeddedCode, (400..<500).contains(code) { return isRetryableStatus(code) }
            return true
        case .incompleteStream, .malformedResponse, .disk:
            return true
        case .invalidRequest, .responseTooLarge, .crashLoop, .noEndpoint, .expired:
            return false
        }
    }

    /// A 401 or 403, or a 5xx whose body says the API key is missing or wrong (some proxies
    /// answer 500 for that).
    public static func isAuthenticationFailure(_ failure: AttemptFailure) -> Bool {
        guard failure.kind == .http, let status = failure.httpStatus else { return false }
        if status == 401 || status == 403 { return true }
        guard status >= 500, let body = failure.providerBody else { return false }
        let text = String(decoding: body.prefix(4096), as: UTF8.self).lowercased()
        let namesKey = ["api key", "api_key", "apikey", "authorization header"].contains { text.contains($0) }
        let saysMissing = ["missing", "not provided", "no api key", "required", "invalid", "incorrect"].contains { text.contains($0) }
        return namesKey && saysMissing
    }

    public static func isRetryableStatus(_ status: Int) -> Bool {
        status == 408 || status == 409 || status == 429 || status >= 500
    }

    /// The wait the provider asked for: `retry-after-ms`, else `Retry-After` in seconds or
    /// as an HTTP date. Nil when it asked for none. Always finite and non-negative, however
    /// absurd the header.
    public static func requestedDelay(_ headers: [String: String], now: Date) -> Double? {
        if let text = headers["retry-after-ms"], let ms = decimal(TextEscaping.trimmed(text)) {
            return ms / 1000
        }
        guard let text = headers["retry-after"].map(TextEscaping.trimmed), !text.isEmpty else { return nil }
        if let seconds = decimal(text) { return seconds }
        if let date = HTTPDate.parse(text) { return max(0, date.timeIntervalSince(now)) }
        return nil
    }

    /// Digits with an optional fraction, as providers write a delay (RFC 9110 allows only
    /// digits): `Double` alone would also read `0x10` as 16, `1e9`, `inf` and `-0`.
    static func decimal(_ text: String) -> Double? {
        var sawDigit = false, sawPoint = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sawDigit = true
            case UInt8(ascii: ".") where sawDigit && !sawPoint: sawPoint = true
            default: return nil
            }
        }
        guard sawDigit, text.utf8.last != UInt8(ascii: "."), let value = Double(text) else { return nil }
        // Digits past Double's range ask for longer than anything: the longest finite wait,
        // which every limit refuses.
        return value.isFinite ? value : .greatestFiniteMagnitude
    }

    /// The exponential backoff before attempt `attempts + 1`, shortened by the jitter.
    public static func backoff(afterAttempts attempts: Int, settings: RetrySettings, random: Double) -> Double {
        let exponent = Double(max(0, attempts - 1))
        let base = min(settings.initialBackoffSeconds * Double(UInt64(1) << UInt64(min(exponent, 60))), settings.maxBackoffSeconds)
        return base * (1 - settings.jitter * min(max(random, 0), 1))
    }

    /// `attempts` is how many attempts have been made, this failed one included.
    public static func decide(_ failure: AttemptFailure, headers: [String: String], attempts: Int,
                              firstSeen: Date, now: Date, settings: RetrySettings, random: Double) -> Decision {
        guard isRetryable(failure, headers: headers) else {
            return .giveUp(.notRetryable)
        }
        guard attempts < settings.maxAttempts else {
            return .giveUp(.attemptsExhausted(attempts: attempts))
        }
        let delay: Double
        if let asked = requestedDelay(headers, now: now) {
            guard asked <= settings.maxRetryAfterSeconds else {
                return .giveUp(.retryAfterTooLong(askedSeconds: asked, limitSeconds: settings.maxRetryAfterSeconds))
            }
            delay = asked
        } else {
            delay = backoff(afterAttempts: attempts, settings: settings, random: random)
        }
        let age = now.timeIntervalSince(firstSeen) + delay
        guard age <= settings.maxLifetimeSeconds else {
            return .giveUp(.lifetimeExceeded(ageSeconds: age, limitSeconds: settings.maxLifetimeSeconds))
        }
        return .retry(afterSeconds: delay, reason: failure.kind)
    }

    /// A number of seconds as whole digits for a message, whatever its size: `Int(_:)` traps
    /// past Int's range, and a provider may send any number.
    static func wholeSeconds(_ seconds: Double) -> String {
        guard seconds.isFinite else { return seconds > 0 ? "inf" : "nan" }
        let rounded = seconds.rounded(.up)
        guard let whole = Int(exactly: rounded) else { return "\(rounded)" }
        return String(whole)
    }

    /// Durations as OpenAI writes them in `x-ratelimit-reset-*`: "1s", "6m0s", "20ms", "1h2m3.5s".
    public static func duration(_ text: String) -> Double? {
        let trimmed = TextEscaping.trimmed(text)
        if let plain = Double(trimmed) { return plain.isFinite && plain >= 0 ? plain : nil }
        var total = 0.0
        var number = ""
        var index = trimmed.startIndex
        var sawUnit = false
        while index < trimmed.endIndex {
            let character = trimmed[index]
            if character.isNumber || character == "." {
                number.append(character)
                index = trimmed.index(after: index)
                continue
            }
            guard let value = Double(number) else { return nil }
            let rest = trimmed[index...]
            if rest.hasPrefix("ms") {
                total += value / 1000
                index = trimmed.index(index, offsetBy: 2)
            } else if character == "h" {
                total += value * 3600
                index = trimmed.index(after: index)
            } else if character == "m" {
                total += value * 60
                index = trimmed.index(after: index)
            } else if character == "s" {
                total += value
                index = trimmed.index(after: index)
            } else {
                return nil
            }
            number = ""
            sawUnit = true
        }
        return sawUnit && number.isEmpty && total.isFinite ? total : nil
    }
}
