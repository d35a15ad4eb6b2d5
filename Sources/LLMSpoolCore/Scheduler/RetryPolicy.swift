import Foundation

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

    public init() {}
}

/// Whether and when to try again. Pure: a failed attempt, its headers and the history in;
/// a decision out. The rule is openai-python's, made durable.
public enum RetryPolicy {
    public enum Decision: Sendable, Equatable {
        case retry(afterSeconds: Double, reason: String)
        case giveUp(reason: String)
    }

    /// libcurl codes that no retry can fix: bad URL, unsupported protocol, bad TLS set-up.
    static let permanentCurlCodes: Set<Int32> = [1, 2, 3, 4, 27, 43, 48, 58, 60, 77]

    public static func isRetryable(_ failure: AttemptFailure, headers: [String: String]) -> Bool {
        // No retry brings a missing or refused key, whatever x-should-retry says.
        if isAuthenticationFailure(failure) { return false }
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
        case .invalidRequest, .responseTooLarge:
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
    /// as an HTTP date. Nil when it asked for none.
    public static func requestedDelay(_ headers: [String: String], now: Date) -> Double? {
        if let text = headers["retry-after-ms"], let ms = Double(text.trimmingCharacters(in: .whitespaces)), ms >= 0, ms.isFinite {
            return ms / 1000
        }
        guard let text = headers["retry-after"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let seconds = Double(text), seconds >= 0, seconds.isFinite { return seconds }
        if let date = httpDate(text) { return max(0, date.timeIntervalSince(now)) }
        return nil
    }

    /// The exponential backoff before attempt `attempts + 1`, shortened by the jitter.
    public static func backoff(afterAttempts attempts: Int, settings: RetrySettings, random: Double) -> Double {
        let exponent = Double(max(0, attempts - 1))
        let base = min(settings.initialBackoffSeconds * pow(2, min(exponent, 60)), settings.maxBackoffSeconds)
        return base * (1 - settings.jitter * min(max(random, 0), 1))
    }

    /// `attempts` is how many attempts have been made, this failed one included.
    public static func decide(_ failure: AttemptFailure, headers: [String: String], attempts: Int,
                              firstSeen: Date, now: Date, settings: RetrySettings, random: Double) -> Decision {
        guard isRetryable(failure, headers: headers) else {
            return .giveUp(reason: "not retryable")
        }
        guard attempts < settings.maxAttempts else {
            return .giveUp(reason: "gave up after \(attempts) attempts (max_attempts)")
        }
        let delay: Double
        if let asked = requestedDelay(headers, now: now) {
            guard asked <= settings.maxRetryAfterSeconds else {
                return .giveUp(reason: "the provider asked to wait \(Int(asked.rounded(.up))) s, more than max_retry_after_seconds (\(Int(settings.maxRetryAfterSeconds)))")
            }
            delay = asked
        } else {
            delay = backoff(afterAttempts: attempts, settings: settings, random: random)
        }
        let age = now.timeIntervalSince(firstSeen) + delay
        guard age <= settings.maxLifetimeSeconds else {
            return .giveUp(reason: "the next attempt would start \(Int(age)) s after the request was first seen, past max_lifetime_seconds (\(Int(settings.maxLifetimeSeconds)))")
        }
        return .retry(afterSeconds: delay, reason: failure.kind.rawValue)
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// Durations as OpenAI writes them in `x-ratelimit-reset-*`: "1s", "6m0s", "20ms", "1h2m3.5s".
    public static func duration(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let plain = Double(trimmed) { return plain }
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
        return sawUnit && number.isEmpty ? total : nil
    }
}
