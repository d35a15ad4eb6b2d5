/// Whether a request in `outgoing` that is not in flight waits, until when and why, judged
/// from outside the daemon by the rule the scheduler applies (`Scheduler.chooseEndpoint`):
/// what `status`, `show`, `queue` and the live line of `submit --wait` say.
public enum RequestWaitJudge {
    /// One endpoint as the running daemon publishes it, in its fallback order.
    public struct EndpointView: Sendable, Equatable {
        public var name: String
        public var api: EndpointAPI
        public var concurrency: Int
        public var inFlight: Int
        /// Why it takes no request now; nil when it could.
        public var wait: EndpointWait?

        public init(name: String, api: EndpointAPI, concurrency: Int, inFlight: Int, wait: EndpointWait? = nil) {
            self.name = name
            self.api = api
            self.concurrency = concurrency
            self.inFlight = inFlight
            self.wait = wait
        }
    }

    /// What the request needs: its dialect's protocol (nil: any, when it was not read), the
    /// endpoint it names if any, and the endpoint its next attempt tries first (its task
    /// record's `preferred_endpoint`).
    public struct Need: Sendable, Equatable {
        public var api: EndpointAPI?
        public var pinned: String?
        public var preferred: Int

        public init(api: EndpointAPI? = nil, pinned: String? = nil, preferred: Int = 0) {
            self.api = api
            self.pinned = pinned
            self.preferred = preferred
        }
    }

    /// The daemon's own limit on transfers at once, and how many run.
    public struct Slots: Sendable, Equatable {
        public var concurrency: Int
        public var inFlight: Int

        public init(concurrency: Int, inFlight: Int) {
            self.concurrency = concurrency
            self.inFlight = inFlight
        }
    }

    public struct Verdict: Sendable, Equatable {
        /// True when the request waits for a time (its back-off or an endpoint's pause);
        /// false when it is queued and goes as soon as a slot frees.
        public var waiting: Bool
        /// When it can go next; nil when only a free slot is awaited.
        public var nextAttempt: Double?
        /// Why it does not go now, for a person; nil when nothing holds it.
        public var reason: String?
        /// The part of `reason` that is not the request's own back-off: an endpoint's wait
        /// or a full set of slots (what the live line adds to its own countdown).
        public var holdingReason: String?

        public init(waiting: Bool, nextAttempt: Double? = nil, reason: String? = nil, holdingReason: String? = nil) {
            self.waiting = waiting
            self.nextAttempt = nextAttempt
            self.reason = reason
            self.holdingReason = holdingReason
        }
    }

    /// `ownNotBefore` is the request's own back-off (its record's next attempt time); `endpoints`
    /// are empty when no daemon runs. `time` formats a time for people.
    public static func judge(ownNotBefore: Double?, lastError: String?, need: Need, endpoints: [EndpointView], slots: Slots?,
                             now: Double, time: (Double) -> String) -> Verdict {
        let own = ownNotBefore.flatMap { $0 > now ? $0 : nil }
        let held = endpointHold(need: need, endpoints: endpoints, now: now, time: time)
        var parts: [String] = []
        var holding: String?
        var next: Double?
        if let own {
            next = own
            parts.append("next attempt at \(time(own))" + (lastError.map { " after: \($0)" } ?? ""))
        }
        if let held {
            // Named even when the request's own back-off outlasts it: it is why the endpoint
            // takes nothing now (and the request that got the Retry-After waits on both).
            next = max(next ?? held.until, held.until)
            parts.append(held.reason)
            holding = held.reason
        }
        if next != nil { return Verdict(waiting: true, nextAttempt: next, reason: parts.joined(separator: "; "), holdingReason: holding) }
        var slotReason: String?
        if let slots, slots.inFlight >= slots.concurrency {
            slotReason = "waiting for a free slot (\(slots.inFlight) in flight, concurrency \(slots.concurrency))"
        } else if let free = candidates(need: need, endpoints: endpoints).first(where: { $0.wait == nil }), free.inFlight >= free.concurrency {
            slotReason = "waiting for a free slot on endpoint \(free.name) (\(free.inFlight) in flight, its concurrency \(free.concurrency))"
        }
        return Verdict(waiting: false, reason: slotReason, holdingReason: slotReason)
    }

    /// The endpoints that may carry the request, in the order the scheduler tries them.
    static func candidates(need: Need, endpoints: [EndpointView]) -> [EndpointView] {
        guard !endpoints.isEmpty else { return [] }
        if let pinned = need.pinned { return endpoints.filter { $0.name == pinned } }
        let count = endpoints.count
        // A record may hold any number: a negative one must not index before the list.
        let start = (need.preferred % count + count) % count
        return (0..<count).map { endpoints[(start + $0) % count] }.filter { need.api == nil || $0.api == need.api }
    }

    /// The scheduler skips an endpoint cooling down or paused for long for the next one, but
    /// waits for the first that is paused briefly or at its own rate limit
    /// (`EndpointWait.isPassedOver`); when it passes every one over it waits for the earliest
    /// to end. The reason names every endpoint passed over on the way.
    static func endpointHold(need: Need, endpoints: [EndpointView], now: Double, time: (Double) -> String) -> (until: Double, reason: String)? {
        var cooling: [(name: String, wait: EndpointWait)] = []
        for endpoint in candidates(need: need, endpoints: endpoints) {
            guard let wait = endpoint.wait, wait.until > now else { return nil }
            cooling.append((endpoint.name, wait))
            if !wait.isPassedOver(now: now) {
                // An endpoint passed over becomes usable again when its cool-down ends.
                return (cooling.map(\.wait.until).min()!, cooling.map { $0.wait.describe(endpoint: $0.name, time: time) }.joined(separator: "; "))
            }
        }
        guard let until = cooling.map(\.wait.until).min() else { return nil }
        return (until, cooling.map { $0.wait.describe(endpoint: $0.name, time: time) }.joined(separator: "; "))
    }
}
