import Foundation
import Synchronization

/// The daemon's counters, gauges and histograms, rendered in Prometheus text format.
/// Every thread may record; the lock is held for a few additions at a time.
public final class Metrics: Sendable {
    /// A cumulative histogram with fixed upper bounds, in seconds.
    struct Histogram: Sendable {
        static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
        var counts = [Int](repeating: 0, count: Histogram.bounds.count)
        var sum = 0.0
        var total = 0

        mutating func observe(_ value: Double) {
            for (index, bound) in Histogram.bounds.enumerated() where value <= bound { counts[index] += 1 }
            sum += value
            total += 1
        }
    }

    struct State: Sendable {
        var outcomes: [String: Int] = [:]
        var retries: [String: Int] = [:]
        var bytesIn: Int64 = 0
        var bytesOut: Int64 = 0
        var tokens: [String: Int] = [:]
        /// Every count of every `usage`, as `status` sums them.
        var usage: [String: Int] = [:]
        /// The same, of the results answered through the background lane.
        var batchUsage: [String: Int] = [:]
        /// `llmspool_lane_tokens_total`: by lane (`live`, `batch`), then kind.
        var laneTokens: [String: [String: Int]] = [:]
        var rescans: [String: Int] = [:]
        var overflows = 0
        var intakeReads = 0
        var batchLines: [String: Int] = [:]
        var batches: [String: Int] = [:]
        var firstByte = Histogram()
        var duration = Histogram()
        /// By endpoint name: attempts by result, retries by reason, bytes.
        var endpointAttempts: [String: [String: Int]] = [:]
        var endpointRetries: [String: [String: Int]] = [:]
        var endpointBytesIn: [String: Int64] = [:]
        var endpointBytesOut: [String: Int64] = [:]
        /// By endpoint name: tokens its answers reported, by kind; cool-downs it entered.
        var endpointTokens: [String: [String: Int]] = [:]
        var endpointCooldowns: [String: Int] = [:]
    }

    private let state = Mutex(State())
    /// Heartbeats of the two loops, for /healthz (seconds since the epoch).
    private let watcherBeat = Atomic<Int64>(0)
    private let engineBeat = Atomic<Int64>(0)
    private let gauges = Mutex<(queued: Int, inFlight: Int, deferred: Int)>((0, 0, 0))
    /// By endpoint name: transfers in flight, and the cause of a wait (see `EndpointWait`).
    private let endpointGauges = Mutex<(inFlight: [String: Int], waits: [String: String], names: [String])>(([:], [:], []))
    /// The background lane's remote batches as the lane last showed them.
    private let remoteGauges = Mutex<[BackgroundLane.Progress]>([])
    /// Why nothing is written or sent now, as the status thread last saw it.
    private let holds = Mutex<(elsewhere: Bool, unwritable: Bool)>((false, false))

    public init() {}

    public func outcome(_ name: String) { state.withLock { $0.outcomes[name, default: 0] += 1 } }

    /// Results, failures and tokens since the daemon started.
    public func finishedTotals() -> SpoolTotals {
        state.withLock { SpoolTotals(done: $0.outcomes["done", default: 0], failed: $0.outcomes["failed", default: 0], tokens: $0.usage, batchTokens: $0.batchUsage) }
    }
    public func retry(_ reason: String, endpoint: String? = nil) {
        state.withLock {
            $0.retries[reason, default: 0] += 1
            if let endpoint { $0.endpointRetries[endpoint, default: [:]][reason, default: 0] += 1 }
        }
    }
    /// Lines of batches committed, by outcome (`succeeded`, `failed`, `cancelled`, `expired`).
    public func batchLines(_ outcome: String, count: Int = 1) { state.withLock { $0.batchLines[outcome, default: 0] += count } }
    /// Batches that ended, by status (`completed`, `cancelled`, `failed` when refused).
    public func batch(_ status: String) { state.withLock { $0.batches[status, default: 0] += 1 } }
    public func rescan(_ reason: String) { state.withLock { $0.rescans[reason, default: 0] += 1 } }
    public func overflow() { state.withLock { $0.overflows += 1 } }
    /// Intake read a request file (to validate it).
    public func intakeRead() { state.withLock { $0.intakeReads += 1 } }

    /// The counts `llmspool_tokens_total` has by kind: chat's own, and the common names every
    /// dialect's usage is read under (`UsageNames`).
    static let tokenKinds = ["prompt_tokens", "completion_tokens", UsageNames.input, UsageNames.output,
                             UsageNames.cachedInput, UsageNames.reasoning]
    /// Each kind with the name `llmspool_endpoint_tokens_total` gives it (no `_tokens`),
    /// made once: `usage` runs for every result, under the lock.
    static let endpointTokenKinds = tokenKinds.map { ($0, $0.replacingOccurrences(of: "_tokens", with: "")) }

    /// The lanes a result comes through: the live one, and the providers' Batch APIs.
    public enum Lane: String, Sendable, CaseIterable {
        case live, batch
    }

    /// An endpoint began a cool-down after failures in a row.
    public func cooldown(endpoint: String) { state.withLock { $0.endpointCooldowns[endpoint, default: 0] += 1 } }

    public func usage(_ counts: [String: Int], lane: Lane = .live, endpoint: String? = nil) {
        state.withLock { state in
            for key in Metrics.tokenKinds {
                guard let value = counts[key] else { continue }
                state.tokens[key] = TokenCount.sum(state.tokens[key, default: 0], value)
                state.laneTokens[lane.rawValue, default: [:]][key] = TokenCount.sum(state.laneTokens[lane.rawValue]?[key] ?? 0, value)
            }
            if let endpoint {
                for (key, kind) in Metrics.endpointTokenKinds {
                    guard let value = counts[key] else { continue }
                    state.endpointTokens[endpoint, default: [:]][kind] = TokenCount.sum(state.endpointTokens[endpoint]?[kind] ?? 0, value)
                }
            }
            for (key, value) in counts { state.usage[key] = TokenCount.sum(state.usage[key, default: 0], value) }
            if lane == .batch {
                for (key, value) in counts { state.batchUsage[key] = TokenCount.sum(state.batchUsage[key, default: 0], value) }
            }
        }
    }

    public func attempt(endpoint: String? = nil, result: String? = nil, sent: Int64, received: Int64, firstByteSeconds: Double?, totalSeconds: Double) {
        state.withLock {
            $0.bytesOut += sent
            $0.bytesIn += received
            if let endpoint {
                $0.endpointBytesOut[endpoint, default: 0] += sent
                $0.endpointBytesIn[endpoint, default: 0] += received
                if let result { $0.endpointAttempts[endpoint, default: [:]][result, default: 0] += 1 }
            }
            if let firstByteSeconds { $0.firstByte.observe(firstByteSeconds) }
            $0.duration.observe(totalSeconds)
        }
    }

    public func setGauges(queued: Int, inFlight: Int, deferred: Int) { gauges.withLock { $0 = (queued, inFlight, deferred) } }

    /// `elsewhere`: the spool's names lead outside the spool the daemon started with
    /// (`SpoolLayout.integrityProblem`); `unwritable`: the spool cannot be written (a start
    /// waiting for space, or the last probe write failed, `DiskHealth.probeFailed`). Either
    /// holds every request: an alert on the gauge sees what the log says once.
    public func setHeldElsewhere(_ held: Bool) { holds.withLock { $0.elsewhere = held } }
    public func setUnwritable(_ held: Bool) { holds.withLock { $0.unwritable = held } }

    /// Each endpoint's transfers in flight and, when it waits, the cause (all endpoints named,
    /// so that a gauge falls back to 0 rather than vanish).
    public func setEndpointGauges(names: [String], inFlight: [String: Int], waits: [String: String]) {
        endpointGauges.withLock { $0 = (inFlight, waits, names) }
    }

    /// A label value as the exposition format wants it: backslash, quote and newline escaped.
    static func labelValue(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n", "\r\n", "\r": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
    public func watcherAlive() { watcherBeat.store(Int64(Date().timeIntervalSince1970), ordering: .relaxed) }
    public func engineAlive() { engineBeat.store(Int64(Date().timeIntervalSince1970), ordering: .relaxed) }

    /// Both loops have shown life within the last `seconds`.
    public func healthy(within seconds: Int64 = 10) -> Bool {
        let now = Int64(Date().timeIntervalSince1970)
        return now - watcherBeat.load(ordering: .relaxed) <= seconds && now - engineBeat.load(ordering: .relaxed) <= seconds
    }

    /// The remote batches the lane carries now (a finished one leaves the metrics).
    public func remoteBatches(_ list: [BackgroundLane.Progress]) { remoteGauges.withLock { $0 = list } }

    public func render() -> String {
        let current = state.withLock { $0 }
        let gauge = gauges.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) { out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n" }
        func labelled(_ name: String, _ label: String, _ values: [String: Int], known: [String]) {
            for key in Set(known).union(values.keys).sorted() { out += "\(name){\(label)=\"\(key)\"} \(values[key] ?? 0)\n" }
        }
        family("llmspool_requests_total", "counter", "Requests that ended, by outcome.")
        labelled("llmspool_requests_total", "outcome", current.outcomes, known: ["done", "failed", "cancelled"])
        family("llmspool_batch_lines_total", "counter", "Lines of batch files that ended, by outcome.")
        labelled("llmspool_batch_lines_total", "outcome", current.batchLines, known: ["succeeded", "failed", "cancelled", "expired"])
        family("llmspool_batches_total", "counter", "Batch files that ended, by status.")
        labelled("llmspool_batches_total", "status", current.batches, known: ["completed", "cancelled", "failed"])
        family("llmspool_retries_total", "counter", "Attempts that failed and were retried, by reason.")
        labelled("llmspool_retries_total", "reason", current.retries, known: [])
        family("llmspool_in_flight", "gauge", "Transfers in flight.")
        out += "llmspool_in_flight \(gauge.inFlight)\n"
        family("llmspool_queued", "gauge", "Requests waiting for a transfer slot.")
        out += "llmspool_queued \(gauge.queued)\n"
        family("llmspool_deferred", "gauge", "Requests waiting for a retry.")
        out += "llmspool_deferred \(gauge.deferred)\n"
        let held = holds.withLock { $0 }
        family("llmspool_spool_held", "gauge",
               "1 while nothing is written or sent, by reason: elsewhere (the spool's folders are not the ones the daemon started with: unmounted, replaced, a folder swapped for a link), unwritable (the spool cannot be written: a start waiting for space, or the last probe write before a start failed).")
        out += "llmspool_spool_held{reason=\"elsewhere\"} \(held.elsewhere ? 1 : 0)\n"
        out += "llmspool_spool_held{reason=\"unwritable\"} \(held.unwritable ? 1 : 0)\n"
        family("llmspool_received_bytes_total", "counter", "Response bytes received.")
        out += "llmspool_received_bytes_total \(current.bytesIn)\n"
        family("llmspool_sent_bytes_total", "counter", "Request bytes sent.")
        out += "llmspool_sent_bytes_total \(current.bytesOut)\n"
        family("llmspool_tokens_total", "counter", "Tokens the endpoints reported, by kind.")
        labelled("llmspool_tokens_total", "kind", current.tokens.reduce(into: [:]) { $0[$1.key.replacingOccurrences(of: "_tokens", with: "")] = $1.value },
                 known: ["prompt", "completion", UsageNames.input, UsageNames.output])
        family("llmspool_lane_tokens_total", "counter", "Tokens the endpoints reported, by lane (live, or batch: the providers' Batch APIs, billed at their batch rate) and kind.")
        for lane in Lane.allCases {
            for kind in [UsageNames.input, UsageNames.output] + Metrics.tokenKinds.filter({ $0 != UsageNames.input && $0 != UsageNames.output }) {
                let value = current.laneTokens[lane.rawValue]?[kind]
                // The two common kinds are always shown, so that a lane starts at 0 rather than appear later.
                guard value != nil || kind == UsageNames.input || kind == UsageNames.output else { continue }
                out += "llmspool_lane_tokens_total{lane=\"\(lane.rawValue)\",kind=\"\(kind.replacingOccurrences(of: "_tokens", with: ""))\"} \(value ?? 0)\n"
            }
        }
        family("llmspool_remote_batch_requests", "gauge",
               "Requests of each remote batch of the background lane, by kind (total, completed, failed: the provider's counts at the last poll).")
        for remote in remoteGauges.withLock({ $0 }) {
            let labels = "group=\"\(Metrics.labelValue(remote.group))\",batch=\"\(Metrics.labelValue(remote.batchID ?? ""))\","
                + "status=\"\(Metrics.labelValue(remote.remoteStatus ?? remote.state))\""
            for (kind, value) in [("total", remote.total ?? remote.members), ("completed", remote.completed ?? 0), ("failed", remote.failed ?? 0)] {
                out += "llmspool_remote_batch_requests{\(labels),kind=\"\(kind)\"} \(value)\n"
            }
        }
        for (name, help, histogram) in [("llmspool_first_byte_seconds", "Time from the start of an attempt to its first response byte.", current.firstByte),
                                        ("llmspool_attempt_seconds", "Time an attempt took, start to end.", current.duration)] {
            family(name, "histogram", help)
            for (index, bound) in Histogram.bounds.enumerated() { out += "\(name)_bucket{le=\"\(bound)\"} \(histogram.counts[index])\n" }
            out += "\(name)_bucket{le=\"+Inf\"} \(histogram.total)\n\(name)_sum \(histogram.sum)\n\(name)_count \(histogram.total)\n"
        }
        let endpoint = endpointGauges.withLock { $0 }
        let names = Set(endpoint.names).union(current.endpointAttempts.keys).sorted()
        func perEndpoint(_ name: String, _ values: [String: [String: Int]], _ label: String) {
            for host in names {
                for (key, count) in (values[host] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    out += "\(name){endpoint=\"\(Metrics.labelValue(host))\",\(label)=\"\(Metrics.labelValue(key))\"} \(count)\n"
                }
            }
        }
        family("llmspool_endpoint_attempts_total", "counter", "Attempts that ended, by endpoint and result (status class or what ended them).")
        perEndpoint("llmspool_endpoint_attempts_total", current.endpointAttempts, "result")
        family("llmspool_endpoint_retries_total", "counter", "Attempts that failed and were retried, by endpoint and reason.")
        perEndpoint("llmspool_endpoint_retries_total", current.endpointRetries, "reason")
        for (name, help, values) in [("llmspool_endpoint_received_bytes_total", "Response bytes received, by endpoint.", current.endpointBytesIn),
                                     ("llmspool_endpoint_sent_bytes_total", "Request bytes sent, by endpoint.", current.endpointBytesOut)] {
            family(name, "counter", help)
            for host in names { out += "\(name){endpoint=\"\(Metrics.labelValue(host))\"} \(values[host] ?? 0)\n" }
        }
        family("llmspool_endpoint_tokens_total", "counter", "Tokens the answers of an endpoint reported, by endpoint and kind.")
        perEndpoint("llmspool_endpoint_tokens_total", current.endpointTokens, "kind")
        family("llmspool_endpoint_cooldowns_total", "counter", "Cool-downs an endpoint entered after failures in a row, by endpoint.")
        for host in names { out += "llmspool_endpoint_cooldowns_total{endpoint=\"\(Metrics.labelValue(host))\"} \(current.endpointCooldowns[host] ?? 0)\n" }
        family("llmspool_endpoint_in_flight", "gauge", "Transfers in flight, by endpoint.")
        for host in names { out += "llmspool_endpoint_in_flight{endpoint=\"\(Metrics.labelValue(host))\"} \(endpoint.inFlight[host] ?? 0)\n" }
        family("llmspool_endpoint_waiting", "gauge", "1 while an endpoint takes no request (cooling down, paused by the provider, at its own rate limit), by cause.")
        for host in names {
            for cause in ["cooling-down", "retry-after", "rate-limit", "own-rate-limit"] {
                out += "llmspool_endpoint_waiting{endpoint=\"\(Metrics.labelValue(host))\",cause=\"\(cause)\"} \(endpoint.waits[host] == cause ? 1 : 0)\n"
            }
        }
        family("llmspool_watcher_rescans_total", "counter", "Scans of outgoing, by reason.")
        labelled("llmspool_watcher_rescans_total", "reason", current.rescans, known: ["start", "periodic", "overflow"])
        family("llmspool_watcher_overflows_total", "counter", "inotify queue overflows.")
        out += "llmspool_watcher_overflows_total \(current.overflows)\n"
        family("llmspool_watcher_reads_total", "counter", "Request files read and validated by intake.")
        out += "llmspool_watcher_reads_total \(current.intakeReads)\n"
        return out
    }
}
