/// The queue of tasks: which start, on which endpoint, in what order, how many at once,
/// when retries are due, and which reports are duplicates. A pure state machine: events
/// and the time in, actions out, no I/O.
///
/// A task's life: `queued` -> `transferring` -> `finishing` -> (`deferred` -> `queued` ...)
/// -> forgotten. While an id is known, every further report about it (a rescan, a second
/// inotify event, an edit of the file in flight) is a duplicate and is dropped, so an
/// answer is never fetched twice at once.
public struct Scheduler: Sendable {
    public enum State: Equatable, Sendable {
        case queued
        /// Waiting for a retry (or a persisted not-before time); holds no slot.
        case deferred(until: Double)
        case transferring(endpoint: Int)
        /// The attempt ended (or never started); its outcome is being written.
        case finishing
        /// Handed to the background lane: it goes through a provider's Batch API.
        case laned
    }

    public enum Event: Equatable, Sendable {
        /// Intake found a file.
        case arrived(Intake)
        /// The transfer of `id` ended, however it ended.
        case transferEnded(id: String, feedback: EndpointFeedback)
        /// The finisher decided to try again at `at`; the descriptor carries the history.
        case retry(TaskDescriptor, at: Double)
        /// The outcome of `id` is on disk; the task is over.
        case finalized(id: String)
        /// The request file of `id` left `outgoing` without the daemon's doing.
        case requestRemoved(id: String)
        /// Time passed: start what became due.
        case tick
        /// A person asked for a task waiting for its retry (or, with nil, every one) to go
        /// now (`llmspool retry ID`, `retry --all`), like `postqueue -i`: its own back-off and
        /// an endpoint's cool-down (the daemon's own judgement, as Postfix's per-destination
        /// back-off) no longer hold it; a provider's pause or rate limit still does.
        case sendNow(id: String?)
        /// The spool's folders are its own again: these tasks, whose start was held while
        /// they were not (`Finisher`), are due now. Each one still waiting goes to the back
        /// of its line as when its wait ends; unlike `sendNow`, an endpoint's cool-down still
        /// holds it. One still finishing (its finisher held it, and its retry is not posted
        /// yet) is due as soon as that retry comes. Any other id is left alone.
        case releaseHeld(ids: [String])
        /// The transfer of `id` was placed on a connection of a multiplexing endpoint
        /// (`connection`: the engine's key for it). See `ConnectionPacing`.
        case connected(id: String, connection: Int)
        /// Stop starting transfers.
        case drain
        /// The lane has the outcome of a laned task and is writing it (then `.retry` or
        /// `.finalized` follows, as for an attempt).
        case laneEnded(id: String)
        /// The lane cannot carry a laned task (its group was refused): it goes live.
        case laneReturned(TaskDescriptor)
        /// The lane found, after a restart, remote batches already created for these
        /// requests: each one goes back to its batch when it arrives, whatever the config
        /// says now about batching (sending it live as well would pay for it twice). Also
        /// posted by a batch file's runner just before a line a group not followed here may
        /// carry (`RemoteGroupClaims.lineFed`): the lane holds it aside until that group is
        /// adopted.
        case laneResumed(ids: [String])
        /// The claim of a task about to start showed it to be a member of a remote batch this
        /// daemon follows (one it adopted from a daemon that is gone): it goes back to that
        /// batch instead of starting, its slot freed; the engine hands it to the lane.
        case rejoinedLane(id: String)
    }

    public enum Action: Equatable, Sendable {
        case start(TaskDescriptor, endpoint: Int)
        case reject(id: String, requestPath: String, problem: RequestProblem)
        /// Finish the clean-up of a task whose record says it ended.
        case completeEnded(id: String, requestPath: String)
        /// Abort a running transfer; its outcome is a cancellation.
        case cancelTransfer(id: String)
        /// A queued or deferred task was withdrawn before it started; `identity` is the file
        /// it was read from, which tells a withdrawal from the clean-up of an ended task.
        case withdrawn(id: String, identity: FileIdentity? = nil)
        /// No endpoint speaks the task's dialect: it fails (kind `no-endpoint`) with `message`,
        /// which names what is configured.
        case noEndpoint(TaskDescriptor, message: String)
        /// Send the task through the background lane of `endpoint`.
        case deferToLane(TaskDescriptor, endpoint: Int)
        /// Hand the task back to the remote batch the lane resumed for it (`laneResumed`).
        case rejoinLane(TaskDescriptor)
        /// A laned task's file left `outgoing`: the lane drops it, or discards its answer.
        case withdrawFromLane(id: String)
        /// A request file left `outgoing` when no task of its id is held (one whose outcome
        /// was written while it left waits for `.finalized`): nothing will clean it up, and
        /// whoever waited for its removal (the finisher, after a removal that failed) can
        /// stop waiting.
        case requestLeft(id: String)
    }

    /// Counts by state, kept up to date rather than counted.
    public struct Counts: Sendable, Equatable {
        public var queued = 0
        public var deferred = 0
        public var transferring = 0
        public var finishing = 0
        public var laned = 0
    }

    /// What the scheduler knows of one id. The task is boxed: an entry is kept for every
    /// known id, a background lane's 50,000 among them, and a task held inline would make
    /// every slot of the table a task's size (about 340 bytes) whether it holds one or not.
    struct Entry: Sendable {
        var state: State
        private var box: Box?

        init(state: State, task: TaskDescriptor?) {
            self.state = state
            box = task.map(Box.init)
        }

        var task: TaskDescriptor? {
            get { box?.task }
            set { box = newValue.map(Box.init) }
        }

        /// A task on the heap, shared by the entry's copies.
        final class Box: Sendable {
            let task: TaskDescriptor

            init(_ task: TaskDescriptor) {
                self.task = task
            }
        }
    }

    public private(set) var concurrency: Int
    /// Ended attempts whose outcome is still being written hold their `.partial` open;
    /// past this many, no transfer starts until the finisher catches up.
    public var finishingLimit: Int { max(64, concurrency) }
    public private(set) var gates: [EndpointGate]
    public private(set) var counts = Counts()
    private var entries: [String: Entry] = [:]
    /// Queued ids by the endpoints they may start on. Taken-over tasks (another daemon had
    /// already started them) and tasks a person asked to send now go in front of their line.
    private var lines = ClassQueues()
    private var timers = MinHeap<Timer>(by: { $0.due < $1.due })
    private var rateWake: Double?
    private var draining = false
    /// Multiplexing endpoints' connections, by endpoint index, and the connection each of
    /// their transfers was placed on.
    private var pacing: [Int: ConnectionPacing] = [:]
    private var connectionOf: [String: Int] = [:]
    /// Tasks a person asked to send now: their next start ignores endpoints' cool-downs.
    private var sendingNow: Set<String> = []
    /// Tasks released by `releaseHeld` while their finisher had them: due when their retry comes.
    private var releasedWhileFinishing: Set<String> = []
    /// Tasks whose file left `outgoing` while their outcome was being written: the
    /// finisher may still note that it awaits the file's clean-up (`.requestLeft` follows
    /// `.finalized`, after the note). A retry's start finds the file gone by itself.
    private var removedWhileFinishing: Set<String> = []
    /// Where requests that may wait go; by default nowhere, so every request is live.
    public var laneRouting = LaneRouting()
    /// Members of the remote batches the lane resumed that have not arrived yet.
    private var resumedLaneMembers: Set<String> = []

    struct Timer: Sendable {
        let due: Double
        let id: String
    }

    public init(concurrency: Int, gates: [EndpointGate]) {
        precondition(concurrency > 0 && !gates.isEmpty, "a scheduler needs a positive concurrency and an endpoint")
        self.concurrency = concurrency
        self.gates = gates
        rebuildPacing(now: 0)
    }

    public var isIdle: Bool { entries.isEmpty }
    /// Whether the multiplexing endpoint `index` has awaited a connection past the
    /// allowance (`ConnectionPacing.handshakeOverdue`).
    public func handshakeOverdue(endpoint index: Int, now: Double) -> Bool {
        pacing[index]?.handshakeOverdue(at: now) ?? false
    }
    public var transferring: Int { counts.transferring }
    public func state(of id: String) -> State? { entries[id]?.state }
    /// The task the scheduler keeps for `id` (none for a laned one: the lane has it).
    func heldTask(of id: String) -> TaskDescriptor? { entries[id]?.task }

    /// When a `.tick` may next start something; nil when only an event can.
    public var nextWake: Double? {
        guard !draining else { return nil }
        let due = timers.min?.due
        switch (due, rateWake) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b?): return b
        case (nil, nil): return nil
        }
    }

    public mutating func handle(_ event: Event, now: Double) -> [Action] {
        switch event {
        case .arrived(let intake):
            guard entries[intake.id] == nil else { return [] }
            switch intake {
            case .valid(let task):
                if let notBefore = task.history.notBefore?.timeIntervalSince1970, notBefore > now {
                    set(task.id, Entry(state: .deferred(until: notBefore), task: task))
                    timers.push(Timer(due: notBefore, id: task.id))
                    return []
                }
                let route = laneRouting.route(task)
                // A member not yet handed over (no attempt recorded) belongs to its remote
                // batch; with the config still batching it the lane finds it by the usual
                // way, which also lets a replaced file form a new group.
                if resumedLaneMembers.remove(task.id) != nil, task.history.attempts.isEmpty, !route.isDeferred {
                    set(task.id, Entry(state: .laned, task: nil))
                    return [.rejoinLane(task)]
                }
                switch route {
                case .deferred(let endpoint):
                    // The lane holds the task from here on and hands it back if it goes
                    // live (`laneReturned`): one copy of a laned request is held, not two.
                    set(task.id, Entry(state: .laned, task: nil))
                    return [.deferToLane(task, endpoint: endpoint)]
                case .noEndpoint:
                    set(task.id, Entry(state: .finishing, task: nil))
                    return [.noEndpoint(task, message: laneRouting.noEndpointMessage(task))]
                case .live:
                    break
                }
                if let message = unservable(task) {
                    set(task.id, Entry(state: .finishing, task: nil))
                    return [.noEndpoint(task, message: message)]
                }
                set(task.id, Entry(state: .queued, task: task))
                enqueue(task, inFront: task.takenOver)
                return fill(now)
            case .invalid(let id, let path, let problem):
                set(id, Entry(state: .finishing, task: nil))
                return [.reject(id: id, requestPath: path, problem: problem)]
            case .alreadyEnded(let id, let path):
                set(id, Entry(state: .finishing, task: nil))
                return [.completeEnded(id: id, requestPath: path)]
            }
        case .transferEnded(let id, let feedback):
            guard case .transferring(let endpoint)? = entries[id]?.state else { return [] }
            if endpoint < gates.count { gates[endpoint].release(feedback, now: now) }
            let connection = connectionOf.removeValue(forKey: id)
            pacing[endpoint]?.ended(on: connection)
            entries[id]?.task = nil
            set(id, Entry(state: .finishing, task: nil))
            return fill(now)
        case .retry(let task, let at):
            guard entries[task.id]?.state == .finishing else { return [] }
            // Per retry: the set is empty but while the spool was just held.
            let due = !releasedWhileFinishing.isEmpty && releasedWhileFinishing.remove(task.id) != nil ? min(at, now) : at
            // Leaving `finishing` frees room for the next start too (see `finishingLimit`).
            set(task.id, Entry(state: .deferred(until: due), task: task))
            timers.push(Timer(due: due, id: task.id))
            return releaseDue(now) + fill(now)
        case .finalized(let id):
            resumedLaneMembers.remove(id)
            if !releasedWhileFinishing.isEmpty { releasedWhileFinishing.remove(id) }
            let wasFinishing = entries[id]?.state == .finishing
            let left: [Action] = removedWhileFinishing.contains(id) ? [.requestLeft(id: id)] : []
            set(id, nil)
            return wasFinishing ? left + fill(now) : left
        case .requestRemoved(let id):
            switch entries[id]?.state {
            case .queued?, .deferred?:
                // Queue and timer entries stay and are skipped when reached: removing
                // them from the middle would cost a scan.
                let identity = entries[id]?.task?.identity
                set(id, nil)
                return [.withdrawn(id: id, identity: identity)]
            case .transferring?:
                return [.cancelTransfer(id: id)]
            case .laned?:
                return [.withdrawFromLane(id: id)]
            case .finishing?:
                removedWhileFinishing.insert(id)
                return []
            case nil:
                return [.requestLeft(id: id)]
            }
        case .tick:
            return releaseDue(now) + fill(now)
        case .sendNow(let id):
            let ids = id.map { [$0] } ?? entries.compactMap { entry -> String? in
                switch entry.value.state {
                case .deferred, .queued: entry.key
                default: nil
                }
            }.sorted()
            for id in ids {
                if let entry = entries[id], entry.state == .queued, let task = entry.task {
                    // Queued behind an endpoint's cool-down: it may now pass it, served first
                    // (its place in the queue is skipped once it has started).
                    sendingNow.insert(id)
                    enqueue(task, inFront: true)
                    continue
                }
                guard let entry = entries[id], case .deferred = entry.state, var task = entry.task else { continue }
                sendingNow.insert(id)
                // Its timer stays in the heap and is skipped when reached: the state no
                // longer says deferred until then.
                task.history.notBefore = nil
                set(id, Entry(state: .queued, task: task))
                enqueue(task, inFront: true)
            }
            return releaseDue(now) + fill(now)
        case .releaseHeld(let ids):
            for id in ids {
                if entries[id]?.state == .finishing { releasedWhileFinishing.insert(id) }
                guard let entry = entries[id], case .deferred = entry.state, var task = entry.task else { continue }
                // Its timer stays in the heap and is skipped when reached, as for `sendNow`.
                task.history.notBefore = nil
                set(id, Entry(state: .queued, task: task))
                enqueue(task, inFront: false)
            }
            return releaseDue(now) + fill(now)
        case .connected(let id, let connection):
            guard case .transferring(let endpoint)? = entries[id]?.state, pacing[endpoint] != nil else { return [] }
            if let old = connectionOf[id] {
                pacing[endpoint]?.moved(from: old, to: connection)
            } else {
                pacing[endpoint]?.placed(on: connection)
            }
            connectionOf[id] = connection
            return fill(now)
        case .drain:
            draining = true
            return []
        case .laneEnded(let id):
            guard entries[id]?.state == .laned else { return [] }
            set(id, Entry(state: .finishing, task: nil))
            return []
        case .laneReturned(let task):
            guard entries[task.id]?.state == .laned else { return [] }
            set(task.id, Entry(state: .queued, task: task))
            enqueue(task, inFront: false)
            return fill(now)
        case .laneResumed(let ids):
            resumedLaneMembers.formUnion(ids)
            return []
        case .rejoinedLane(let id):
            guard case .transferring(let endpoint)? = entries[id]?.state else { return [] }
            // Nothing was sent: the endpoint learns nothing of it.
            if endpoint < gates.count { gates[endpoint].release(EndpointFeedback(.neutral), now: now) }
            pacing[endpoint]?.ended(on: connectionOf.removeValue(forKey: id))
            resumedLaneMembers.remove(id)
            set(id, Entry(state: .laned, task: nil))
            return fill(now)
        }
    }

    /// New limits and endpoints (a configuration reload). Running transfers keep their
    /// slots: `gates` arrive with their `active` counts already set.
    public mutating func reconfigure(concurrency: Int, gates: [EndpointGate], now: Double) -> [Action] {
        precondition(concurrency > 0 && !gates.isEmpty, "a scheduler needs a positive concurrency and an endpoint")
        self.concurrency = concurrency
        self.gates = gates
        rebuildPacing(now: now)
        // Waiting tasks whose dialect no endpoint speaks any more fail now, not when a slot
        // frees; queue and timer entries stay and are skipped when reached.
        var actions: [Action] = []
        for id in entries.keys.sorted() {
            guard let entry = entries[id], let task = entry.task, let message = unservable(task) else { continue }
            switch entry.state {
            case .queued, .deferred:
                set(id, Entry(state: .finishing, task: nil))
                actions.append(.noEndpoint(task, message: message))
            case .transferring, .finishing, .laned:
                continue
            }
        }
        return actions + fill(now)
    }

    /// Why each endpoint (by index) takes no request now; nil where it could.
    public func endpointWaits(now: Double) -> [EndpointWait?] {
        gates.map { $0.wait(now: now) }
    }

    /// The pacing of each multiplexing endpoint, counted again from the transfers running
    /// (at start, and when a reload may have changed which endpoints multiplex).
    private mutating func rebuildPacing(now: Double) {
        pacing = [:]
        for (index, gate) in gates.enumerated() {
            if let streams = gate.streamsPerConnection { pacing[index] = ConnectionPacing(streamsPerConnection: streams) }
        }
        for (id, entry) in entries {
            guard case .transferring(let endpoint) = entry.state, pacing[endpoint] != nil else {
                connectionOf[id] = nil
                continue
            }
            pacing[endpoint]?.started(at: now)
            if let connection = connectionOf[id] { pacing[endpoint]?.placed(on: connection) }
        }
    }

    /// How many transfers run on each endpoint now.
    public var activeByEndpoint: [Int: Int] {
        var counts: [Int: Int] = [:]
        for entry in entries.values {
            if case .transferring(let endpoint) = entry.state { counts[endpoint, default: 0] += 1 }
        }
        return counts
    }

    private mutating func set(_ id: String, _ entry: Entry?) {
        if let old = entries[id]?.state { adjust(old, by: -1) }
        // Asked to go now: once it starts or leaves, the ask is spent.
        if !sendingNow.isEmpty, entry?.state != .queued { sendingNow.remove(id) }
        if !removedWhileFinishing.isEmpty, entry?.state != .finishing { removedWhileFinishing.remove(id) }
        entries[id] = entry
        if let new = entry?.state { adjust(new, by: 1) }
    }

    private mutating func adjust(_ state: State, by delta: Int) {
        switch state {
        case .queued: counts.queued += delta
        case .deferred: counts.deferred += delta
        case .transferring: counts.transferring += delta
        case .finishing: counts.finishing += delta
        case .laned: counts.laned += delta
        }
    }

    /// Moves deferred tasks whose time has come to the back of the queue.
    private mutating func releaseDue(_ now: Double) -> [Action] {
        while let timer = timers.min, timer.due <= now {
            _ = timers.pop()
            guard let entry = entries[timer.id], entry.state == .deferred(until: timer.due), let task = entry.task else { continue }
            set(timer.id, Entry(state: .queued, task: task))
            enqueue(task, inFront: false)
        }
        return []
    }

    /// Starts what may start, class by class (`ClassQueues`): a class whose head must wait
    /// is passed over until the next fill, the others go on.
    private mutating func fill(_ now: Double) -> [Action] {
        rateWake = nil
        var actions: [Action] = []
        var blocked: Set<ClassQueues.Key> = []
        while !draining && counts.transferring < concurrency && counts.finishing < finishingLimit,
              let next = lines.next(excluding: blocked) {
            guard let entry = entries[next.id], entry.state == .queued, let task = entry.task else {
                // Withdrawn, or started from its other place in the lines.
                lines.removeHead(of: next.key)
                continue
            }
            if let message = unservable(task) {
                // Queued when an endpoint still spoke its dialect, before a reload removed it.
                lines.removeHead(of: next.key)
                set(next.id, Entry(state: .finishing, task: nil))
                actions.append(.noEndpoint(task, message: message))
                continue
            }
            guard let endpoint = chooseEndpoint(for: task, now: now) else {
                blocked.insert(next.key)
                continue
            }
            lines.removeHead(of: next.key)
            gates[endpoint].admit(estimatedTokens: task.summary.estimatedTokens, now: now)
            pacing[endpoint]?.started(at: now)
            set(next.id, Entry(state: .transferring(endpoint: endpoint), task: task))
            actions.append(.start(task, endpoint: endpoint))
        }
        return actions
    }

    /// Puts a queued task in the line of the endpoints it may start on.
    private mutating func enqueue(_ task: TaskDescriptor, inFront: Bool) {
        let count = gates.count
        let start = task.pinnedEndpoint ?? task.history.preferredEndpoint
        // A record may hold any number: the class is the index it comes to in the list.
        let key = ClassQueues.Key(api: DialectRegistry.dialect(for: task.summary).api, first: (start % count + count) % count,
                                  pinned: task.pinnedEndpoint != nil)
        lines.append(task.id, key: key, inFront: inFront)
    }

    /// The first endpoint, in the task's preferred order, that is not cooling down; nil
    /// (and a wake time, when one is known) when that endpoint cannot take it yet.
    private mutating func chooseEndpoint(for task: TaskDescriptor, now: Double) -> Int? {
        let count = gates.count
        let api = DialectRegistry.dialect(for: task.summary).api
        var earliestCoolingEnd: Double?
        // A pinned task tries its own endpoint only (its index is checked against the list).
        let start = task.pinnedEndpoint ?? task.history.preferredEndpoint
        for offset in 0..<(task.pinnedEndpoint == nil ? count : 1) {
            // A record may hold any number: a negative one must not index before the list.
            let index = ((start % count + count) % count + offset) % count
            // Fallback and cool-down stay among the endpoints that speak the dialect.
            guard gates[index].api == api else { continue }
            switch gates[index].readiness(estimatedTokens: task.summary.estimatedTokens, now: now, ignoringCooldown: sendingNow.contains(task.id)) {
            case .ready:
                // Like a full endpoint: the connection being set up frees room when it is up.
                if let pacing = pacing[index], !pacing.mayStart(at: now) {
                    if let change = pacing.nextChange(after: now) { rateWake = min(rateWake ?? change, change) }
                    return nil
                }
                return index
            case .full:
                return nil
            case .waitUntil(let time):
                rateWake = min(rateWake ?? time, time)
                return nil
            case .coolingDown(let until):
                earliestCoolingEnd = min(earliestCoolingEnd ?? until, until)
            }
        }
        if let earliestCoolingEnd { rateWake = min(rateWake ?? earliestCoolingEnd, earliestCoolingEnd) }
        return nil
    }

    /// Why no endpoint can take `task`, naming what is configured; nil when one speaks its dialect.
    func unservable(_ task: TaskDescriptor) -> String? {
        let api = DialectRegistry.dialect(for: task.summary).api
        if let pinned = task.pinnedEndpoint, gates.indices.contains(pinned), gates[pinned].api != api {
            return "endpoint \(gates[pinned].name) speaks \(gates[pinned].api.rawValue), not \(api.rawValue), which a \(task.summary.dialect) request needs"
        }
        guard !gates.contains(where: { $0.api == api }) else { return nil }
        let configured = gates.map { "\($0.name) (\($0.api.rawValue))" }.joined(separator: ", ")
        return "no endpoint speaks \(api.rawValue), which a \(task.summary.dialect) request needs (configured: \(configured))"
    }
}
