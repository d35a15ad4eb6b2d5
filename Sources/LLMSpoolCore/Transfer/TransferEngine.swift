import CCurl
import Foundation
import Glibc
import Synchronization

/// The event loop: one thread owns the libcurl multi handle, every transfer attached to it
/// and the `Scheduler`. libcurl is driven with `curl_multi_socket_action` over an epoll
/// set, so a wake-up costs the ready connections only, not all of them. Other threads
/// talk to the loop only through `post`, which queues a message and writes the eventfd.
public final class TransferEngine: @unchecked Sendable {
    // @unchecked Sendable holds because every stored `var` below is read and written only
    // on the loop's thread; the only state shared with other threads is `inbox` and
    // `snapshotBox` (Mutexes), `wakeRequested` (atomic) and `poll.wake()`, a write to an
    // eventfd, which any thread may do.

    /// Settings the engine needs for each attempt.
    public struct Settings: Sendable {
        public var concurrency: Int
        public var connectTimeoutSeconds: Double
        public var idleTimeoutSeconds: Double
        public var requestTimeoutSeconds: Double
        public var shutdownGraceSeconds: Double
        public var cooldownAfterFailures: Int
        public var cooldownSeconds: Double
        /// Caps an endpoint-wide pause as it caps a request's Retry-After.
        public var maxPauseSeconds: Double
        public var maxRequestBytes: Int
        public var maxResponseBytes: Int64
        /// `max_event_bytes`, at most the response limit: no event is longer than the answer.
        public var maxEventBytes: Int
        public var fileMode: mode_t
        public var caDirectory: String?
        /// For formats that make the body sent from the file (prompt files).
        public var formats: FormatContext
        /// Which requests may wait and what happens when nothing batches them.
        public var defaultCompletionWindow: String?
        public var deferredFallback: LaneRouter.Fallback

        public init(_ config: Config) {
            defaultCompletionWindow = config.defaultCompletionWindow
            deferredFallback = config.deferredFallback
            formats = config.formatContext
            concurrency = config.concurrency
            connectTimeoutSeconds = config.connectTimeoutSeconds
            idleTimeoutSeconds = config.idleTimeoutSeconds
            requestTimeoutSeconds = config.requestTimeoutSeconds
            shutdownGraceSeconds = config.shutdownGraceSeconds
            cooldownAfterFailures = config.cooldownAfterFailures
            cooldownSeconds = config.cooldownSeconds
            maxPauseSeconds = config.retry.maxRetryAfterSeconds
            maxRequestBytes = config.maxRequestBytes
            maxResponseBytes = config.maxResponseBytes
            maxEventBytes = Int(clamping: min(Int64(config.maxEventBytes), config.maxResponseBytes))
            fileMode = config.fileMode
            caDirectory = config.caDirectory
        }
    }

    /// What the engine hands to the rest of the daemon. Each call must end, sooner or
    /// later, in a `.finalized` or `.retry` event posted back.
    public struct Delegate: Sendable {
        /// An attempt ended; the finisher writes its outcome or schedules a retry.
        public var attemptEnded: @Sendable (AttemptOutcome) -> Void
        /// A request cannot be sent; the finisher fails it.
        public var rejected: @Sendable (_ id: String, _ requestPath: String, _ problem: RequestProblem) -> Void
        /// A request's record says it already ended; the finisher completes its clean-up.
        public var alreadyEnded: @Sendable (_ id: String, _ requestPath: String) -> Void
        /// A queued or waiting request was withdrawn by deleting its file.
        public var withdrawn: @Sendable (_ id: String, _ identity: FileIdentity?) -> Void
        /// No configured endpoint speaks the request's dialect; the finisher fails it.
        public var unservable: @Sendable (_ task: TaskDescriptor, _ message: String) -> Void
        /// A task for the background lane: to group on `endpoint`, or (nil) back to the
        /// remote batch the lane resumed for it.
        public var deferred: @Sendable (_ task: TaskDescriptor, _ endpoint: String?) -> Void = { _, _ in }
        /// A laned request's file left `outgoing`.
        public var laneWithdrawn: @Sendable (_ id: String) -> Void = { _ in }
        /// Another daemon claimed the request first: intake looks at its file again later,
        /// in case that daemon dies holding it.
        public var claimedElsewhere: @Sendable (_ requestPath: String) -> Void = { _ in }
        /// A request found saved again at its start, with no later read of it kept: intake
        /// reads the file again (its arrival may have come while the old task still held the id).
        public var readAgain: @Sendable (_ requestPath: String) -> Void = { _ in }
        /// A request file left `outgoing` when no task of its id is held; nothing is posted back.
        public var requestLeft: @Sendable (_ id: String) -> Void = { _ in }
        /// On a shared spool, a request just claimed (`tookOver`: from a daemon that is gone)
        /// judged against the background lane's remote batches, on the claims' thread.
        public var laneMember: @Sendable (_ id: String, _ tookOver: Bool) -> RemoteGroupClaims.Member = { _, _ in .proceed }

        public init(attemptEnded: @escaping @Sendable (AttemptOutcome) -> Void,
                    rejected: @escaping @Sendable (String, String, RequestProblem) -> Void,
                    alreadyEnded: @escaping @Sendable (String, String) -> Void,
                    withdrawn: @escaping @Sendable (String, FileIdentity?) -> Void,
                    unservable: @escaping @Sendable (TaskDescriptor, String) -> Void) {
            self.unservable = unservable
            self.attemptEnded = attemptEnded
            self.rejected = rejected
            self.alreadyEnded = alreadyEnded
            self.withdrawn = withdrawn
        }
    }

    enum Message {
        case event(Scheduler.Event)
        case leaseLost(String)
        /// A request file left `outgoing`: its id and the path it had.
        case removed(id: String, path: String)
        case reconfigure([Endpoint], Settings)
        /// The lease claimer's answer for a start; `rejoin`: the request is a member of a
        /// remote batch this daemon follows.
        case claimed(LeaseClaimer.Request, LeaseManager.Claim, rejoin: Bool)
        case shutdown
    }

    /// Counts for status and tests, readable from any thread.
    public struct Snapshot: Sendable, Equatable {
        public var queued = 0
        public var deferred = 0
        public var transferring = 0
        public var finishing = 0
        /// Requests handed to the background lane.
        public var laned = 0
        /// Refreshed about once a second.
        public var inFlight: [LiveTransfer] = []
        /// Endpoints that take no request now, and why; refreshed about once a second.
        public var endpointWaits: [NamedEndpointWait] = []
        public var endpointCount = 0
        /// Every endpoint in fallback order, with its slots and wait: how `status` judges
        /// which requests an endpoint's wait holds (`RequestWaitJudge`).
        public var endpoints: [RequestWaitJudge.EndpointView] = []
        public var concurrency = 0
    }

    /// An endpoint's wait, under the endpoint's name.
    public struct NamedEndpointWait: Sendable, Equatable {
        public var endpoint: String
        public var wait: EndpointWait

        public init(endpoint: String, wait: EndpointWait) {
            self.endpoint = endpoint
            self.wait = wait
        }

        public var message: String { wait.describe(endpoint: endpoint) { Timestamp.string(Date(timeIntervalSince1970: $0)) } }
    }

    /// One transfer as `status` shows it.
    public struct LiveTransfer: Sendable, Equatable {
        public var id: String
        public var startedAt: Date
        public var bytesReceived: Int64
        public var events: Int
        public var attempt: Int
        public var endpoint: String
    }

    private static let idleSweepSeconds = 0.25

    private let multi: UnsafeMutableRawPointer
    private let poll: EventPoll
    /// Set by the first message since the loop last looked: later ones need not write the eventfd.
    private let wakeRequested = Atomic<Bool>(false)
    /// The sockets libcurl asked us to watch.
    private var watchedSockets: Set<Int32> = []
    /// The watched sockets by their local port: a transfer knows its connection by port
    /// only (libcurl 7.88 gives no socket of a transfer under way).
    private var socketsByPort: [Int: Int32] = [:]
    private var portsBySocket: [Int32: Int] = [:]
    /// Connections a stream of which ended because the connection itself ended (libcurl
    /// 7.88 tells only that stream; the others on it wait): they count as gone.
    private var endedSockets: Set<Int32> = []
    /// When libcurl wants `curl_multi_socket_action` called for its timeouts (monotonic).
    private var curlTimerDeadline: Double?
    /// Transfers given response bytes during this turn of the loop, whose `.partial` is
    /// written at its end (`flushPartials`).
    private var unflushed: [Transfer] = []
    /// Transfers libcurl placed on a connection during the last call, for the scheduler.
    private var placements: [(id: String, connection: Int)] = []
    /// Batch lines that passed their last check in the libcurl call under way, with the
    /// lease time they went under (`BatchLineStart.mayHaveGoneLate`).
    private var passedLastCheck: [(id: String, until: Double)] = []
    private let inbox = Mutex<[Message]>([])
    private let snapshotBox = Mutex(Snapshot())
    private let finished = DispatchSemaphore(value: 0)
    private let layout: SpoolLayout
    private let delegate: Delegate
    private let known: KnownTasks
    private let metrics: Metrics
    private let diskHealth: DiskHealth
    private let logger: Logger
    private var endpoints: [Endpoint]
    private var settings: Settings

    private var scheduler: Scheduler
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    private var transfersByID: [String: Transfer] = [:]
    private var shutdownDeadline: Double?
    /// How many transfers may hold their `.partial` open: a quarter of the open-files
    /// limit, leaving the rest to sockets (one per transfer), outcomes waiting for the
    /// finisher and the spool itself.
    private var descriptorBudget = 256
    private var lastIdleSweep = 0.0
    private var lastLivePublish = 0.0
    private var lastMultiErrorLog = -1_000.0
    /// The waits last published, to log each one once as it begins.
    private var lastWaits: [NamedEndpointWait] = []
    /// Newer requests that arrived under the name of a task in flight, or under another
    /// name of its id (`a.md` while `a.json` is held), queued when it ends.
    private var replacedInFlight: [String: Intake] = [:]
    /// The file each id the scheduler holds came from, and its identity.
    private var heldFiles: [String: (path: String, identity: FileIdentity?)] = [:]
    /// The claims of a spool several daemons share; nil when this daemon has it alone.
    private let leases: LeaseManager?
    /// Makes the claims of a shared spool; set by `start` when `leases` is.
    private var claimer: LeaseClaimer?
    /// Makes the spool's missing folders again: one closure for every transfer.
    private let remakeFolders: () -> Void
    /// Starts waiting for their claim, by id.
    private var awaitingClaim: [String: TaskDescriptor] = [:]
    /// Ids the scheduler cancelled while their claim was being made.
    private var cancelledWhileClaiming: Set<String> = []
    /// Whether the daemon before this one crashed; otherwise starts recorded by it are
    /// not held against their requests (`CrashGuard`).
    public var previousRunCrashed = false
    /// Where starts are recorded on a local spool; nil on a shared one (records instead).
    private let startJournal: StartJournalFile?
    /// Journaled starts whose attempt ended and whose outcome the finisher has not written
    /// yet (until its `.finalized` or `.retry` comes back): a new generation of the journal
    /// keeps them, with the transfers in flight.
    private var journaledAwaitingOutcome: [String: StartJournalFile.Start] = [:]
    /// How long the loop pauses after each turn; told what each transfer received in it.
    private var pacing = EventLoopPacing()
    /// Transfers that received bytes for their `.partial` during this turn: their
    /// `turnBytes` are cleared when it ends.
    private var receivedThisTurn: [Transfer] = []

    public init(layout: SpoolLayout, endpoints: [Endpoint], settings: Settings, known: KnownTasks, metrics: Metrics = Metrics(),
                diskHealth: DiskHealth = DiskHealth(), leases: LeaseManager? = nil, delegate: Delegate, logger: Logger) throws {
        self.leases = leases
        startJournal = leases == nil ? StartJournalFile(layout: layout, logger: logger) : nil
        self.diskHealth = diskHealth
        guard let multi = curl_multi_init() else { throw ConfigError("libcurl could not create a multi handle") }
        self.multi = multi
        do {
            self.poll = try EventPoll()
        } catch {
            logger.bestEffort("cleaning up the multi handle") { try CurlError.check(curl_multi_cleanup(multi), "curl_multi_cleanup") }
            throw error
        }
        self.layout = layout
        remakeFolders = { [layout, logger] in layout.recreateMissingFolders(logger: logger) }
        self.endpoints = endpoints
        self.settings = settings
        self.known = known
        self.metrics = metrics
        self.delegate = delegate
        self.logger = logger
        self.scheduler = Scheduler(concurrency: settings.concurrency,
                                   gates: TransferEngine.gates(endpoints, settings, active: [:], now: Date().timeIntervalSince1970))
        scheduler.laneRouting = TransferEngine.laneRouting(endpoints, settings)
        // Our scheduler limits concurrency; libcurl's cache keeps that many connections warm.
        try CurlError.check(llms_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, settings.concurrency), "curl_multi_setopt(MAXCONNECTS)")
        // HTTP/2 streams share a connection, at most this many on each. libcurl 7.88 does not
        // hold a connection to the server's SETTINGS_MAX_CONCURRENT_STREAMS when it places a
        // stream: streams past the server's limit wait inside nghttp2 for one to end. Measured
        // with 5,000 streams against nghttpx allowing 100: at 1,000 a connection they ran 400
        // at a time on 4 connections; at 100 (the RFC's recommended floor, which servers allow)
        // each stream starts at once on one of 50.
        try CurlError.check(llms_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)), "curl_multi_setopt(PIPELINING)")
        try CurlError.check(llms_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, TransferEngine.maxStreamsPerConnection),
                            "curl_multi_setopt(MAX_CONCURRENT_STREAMS)")
        // The engine outlives the multi handle's use (cleaned up in deinit): unretained is enough.
        let me = Unmanaged.passUnretained(self).toOpaque()
        // Without its callbacks the engine would never hear of a socket or a timer: fatal.
        try CurlError.check(llms_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me), "curl_multi_setopt(SOCKETDATA)")
        try CurlError.check(llms_multi_setopt_socket_callback(multi) { _, socket, what, context, _ in
            Unmanaged<TransferEngine>.fromOpaque(context!).takeUnretainedValue().socketChanged(socket, what: what)
            return 0
        }, "curl_multi_setopt(SOCKETFUNCTION)")
        try CurlError.check(llms_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me), "curl_multi_setopt(TIMERDATA)")
        try CurlError.check(llms_multi_setopt_timer_callback(multi) { _, milliseconds, context in
            let engine = Unmanaged<TransferEngine>.fromOpaque(context!).takeUnretainedValue()
            engine.curlTimerDeadline = milliseconds < 0 ? nil : TransferEngine.monotonic() + Double(milliseconds) / 1000
            return 0
        }, "curl_multi_setopt(TIMERFUNCTION)")
    }

    /// libcurl says what a connection's socket must be watched for (on the loop's thread,
    /// from inside `curl_multi_socket_action` or `curl_multi_remove_handle`).
    private func socketChanged(_ socket: Int32, what: Int32) {
        if what == CURL_POLL_REMOVE {
            poll.forget(socket)
            watchedSockets.remove(socket)
            if let port = portsBySocket.removeValue(forKey: socket), socketsByPort[port] == socket { socketsByPort[port] = nil }
            endedSockets.remove(socket)
            return
        }
        do {
            try poll.watch(socket, readable: what & CURL_POLL_IN != 0, writable: what & CURL_POLL_OUT != 0,
                           known: watchedSockets.contains(socket))
            if watchedSockets.insert(socket).inserted {
                do {
                    let port = try Syscall.localPort(socket)
                    if port != 0 {
                        socketsByPort[port] = socket
                        portsBySocket[socket] = port
                    }
                } catch {
                    // Not TCP, or gone already: its transfers are then never looked after as
                    // quiet ones (`lookAtQuietTransfers`), only by their timers.
                    logger.debug("no local port for a connection's socket", ["reason": "\(error)"])
                }
            }
        } catch {
            // The transfer on it then ends by its timers.
            logger.error("cannot watch a connection's socket", ["reason": "\(error)"])
        }
    }

    deinit {
        checkMulti(curl_multi_cleanup(multi), "curl_multi_cleanup")
    }

    static func gates(_ endpoints: [Endpoint], _ settings: Settings, active: [Int: Int], now: Double) -> [EndpointGate] {
        endpoints.enumerated().map { index, endpoint in
            EndpointGate(concurrency: min(endpoint.concurrency, settings.concurrency), requestsPerMinute: endpoint.requestsPerMinute,
                         tokensPerMinute: endpoint.tokensPerMinute, cooldownAfterFailures: settings.cooldownAfterFailures,
                         cooldownSeconds: settings.cooldownSeconds, maxPauseSeconds: settings.maxPauseSeconds,
                         active: active[index] ?? 0, name: endpoint.name, api: endpoint.api,
                         streamsPerConnection: endpoint.httpVersion.waitsForMultiplexing(https: endpoint.isHTTPS) ? maxStreamsPerConnection : nil,
                         now: now)
        }
    }

    static func laneRouting(_ endpoints: [Endpoint], _ settings: Settings) -> LaneRouting {
        LaneRouting(endpoints: endpoints.map { LaneRouter.Endpoint(name: $0.name, batch: $0.batch, api: $0.api) },
                    defaultWindow: settings.defaultCompletionWindow, fallback: settings.deferredFallback)
    }

    /// Another daemon holds the lease of `id` now: its transfer here must stop.
    public func leaseLost(_ id: String) {
        enqueue(.leaseLost(id))
    }

    /// Applies new endpoints and limits without touching transfers in flight.
    public func reconfigure(endpoints: [Endpoint], settings: Settings) {
        enqueue(.reconfigure(endpoints, settings))
    }

    public var snapshot: Snapshot { snapshotBox.withLock { $0 } }

    /// Sends the loop an event from any thread.
    public func post(_ event: Scheduler.Event) {
        enqueue(.event(event))
    }

    /// A request file left `outgoing` (from any thread): the task of that file is
    /// withdrawn or cancelled; a file of the same id that waited for it is forgotten only.
    public func removed(id: String, path: String) {
        enqueue(.removed(id: id, path: path))
    }

    private func enqueue(_ message: Message) {
        inbox.withLock { $0.append(message) }
        if !wakeRequested.exchange(true, ordering: .acquiringAndReleasing) { poll.wake() }
    }

    public func start() {
        if let leases {
            let claimer = LeaseClaimer(leases: leases, member: delegate.laneMember) { [weak self] request, claim, rejoin in
                self?.enqueue(.claimed(request, claim, rejoin: rejoin))
            }
            self.claimer = claimer
            claimer.start()
        }
        NamedThread.start("transfer") { [self] in run() }
    }

    /// Stops taking new work, lets transfers in flight finish for the grace period, stops
    /// the rest (their requests stay in `outgoing` and start again from zero on the next
    /// run) and returns when the loop has ended.
    public func shutdown() {
        enqueue(.shutdown)
        finished.wait()
    }

    static func monotonic() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    private func run() {
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            descriptorBudget = Int(min(limit.rlim_cur, 1 << 24)) / 4
            if settings.concurrency > Int(min(limit.rlim_cur, 1 << 24)) / 2 {
                logger.warning("concurrency is high for the open-files limit: each transfer needs a socket, and outcomes waiting to be written hold files",
                               ["concurrency": "\(settings.concurrency)", "open_files_limit": "\(limit.rlim_cur)"])
            }
        }
        var pending: [Message] = []
        var turnStarted = TransferEngine.monotonic()
        while true {
            // Cleared before the inbox is read: a message queued after this writes the eventfd.
            wakeRequested.store(false, ordering: .sequentiallyConsistent)
            inbox.withLock { swap(&pending, &$0) }
            for message in pending { handle(message) }
            pending.removeAll(keepingCapacity: true)

            let now = Date().timeIntervalSince1970
            if let wake = scheduler.nextWake, wake <= now {
                apply(scheduler.handle(.tick, now: now))
            }
            if let deadline = shutdownDeadline {
                if transfers.isEmpty && awaitingClaim.isEmpty { break }
                if TransferEngine.monotonic() >= deadline {
                    abortAll()
                    break
                }
            }
            metrics.engineAlive()
            var running: Int32 = 0
            if let deadline = curlTimerDeadline, TransferEngine.monotonic() >= deadline {
                curlTimerDeadline = nil
                socketAction(llms_curl_socket_timeout, 0, &running, "curl_multi_socket_action(timeout)")
            }
            flushPartials()
            collectCompleted()
            sweepIdle()
            publishSnapshot()
            _ = poll.wait(timeoutMilliseconds: pollTimeoutMilliseconds()) { ready in
                var mask: Int32 = 0
                if ready.readable { mask |= CURL_CSELECT_IN }
                if ready.writable { mask |= CURL_CSELECT_OUT }
                if ready.failed { mask |= CURL_CSELECT_ERR }
                socketAction(ready.fd, mask, &running, "curl_multi_socket_action")
            }
            flushPartials()
            collectCompleted()
            let turnEnded = TransferEngine.monotonic()
            for transfer in receivedThisTurn { transfer.turnBytes = 0 }
            receivedThisTurn.removeAll(keepingCapacity: true)
            let pause = pacing.endTurn(started: turnStarted, ended: turnEnded, openTransfers: transfers.count, stopping: shutdownDeadline != nil)
            // A message (a new request, an outcome written) ends the pause: only the sockets wait.
            if pause > 0 && !wakeRequested.load(ordering: .acquiring) { poll.waitForWake(timeoutMilliseconds: pause) }
            turnStarted = pause > 0 ? TransferEngine.monotonic() : turnEnded
        }
        stopClaimer()
        publishSnapshot()
        finished.signal()
    }

    /// Stops the claimer once the loop has ended: a claim still answered (the grace period
    /// ran out while it was made) is given back, as the shutdown gives back those of the
    /// transfers it stops.
    private func stopClaimer() {
        guard let claimer else { return }
        claimer.stop()
        let late = inbox.withLock { inbox -> [Message] in
            defer { inbox.removeAll() }
            return inbox
        }
        for case .claimed(let request, .claimed, _) in late {
            leases?.release(request.task.id, ended: false)
            logger.info("transfer stopped by shutdown; it will restart on the next run", id: request.task.id)
        }
    }

    /// Sleep no longer than until libcurl's next timeout, the next retry, or the next idle sweep.
    private func pollTimeoutMilliseconds() -> Int32 {
        var timeout = 1000.0
        if let deadline = curlTimerDeadline {
            timeout = min(timeout, max(0, ((deadline - TransferEngine.monotonic()) * 1000).rounded(.up)))
        }
        if let wake = scheduler.nextWake {
            timeout = min(timeout, max(0, (wake - Date().timeIntervalSince1970) * 1000) + 1)
        }
        if !transfers.isEmpty { timeout = min(timeout, TransferEngine.idleSweepSeconds * 1000) }
        return Int32(timeout)
    }

    private func handle(_ message: Message) {
        switch message {
        case .event(var event):
            if case .arrived(.valid(var task)) = event, let name = task.summary.endpoint {
                // A request that names its endpoint goes there and nowhere else.
                if let index = endpoints.firstIndex(where: { $0.name == name }) {
                    task.pinnedEndpoint = index
                    task.history.preferredEndpoint = index
                    event = .arrived(.valid(task))
                } else {
                    let names = endpoints.map(\.name).joined(separator: ", ")
                    event = .arrived(.invalid(id: task.id, requestPath: task.requestPath, problem: RequestProblem(
                        .unsupported, "\"endpoint: \(Logger.escape(name))\" names no configured endpoint (the endpoints are \(names))")))
                }
            }
            if case .arrived(.valid(let task)) = event, let window = task.summary.completionWindow, window != LaneRouter.deferredWindow,
               window.lowercased() == LaneRouter.deferredWindow {
                // Another window means "do not wait"; one that differs only in case is a slip.
                logger.warning("completion_window is read as written, and only \"24h\" waits: the request goes live", id: task.id,
                               ["completion_window": LogValue(window)])
            }
            // A newer file under the name of a task in flight is a new task: kept until the
            // old one ends (its publication leaves the newer file in place), then queued.
            // Only in flight: a queued or finishing task's id seen again is a duplicate (a
            // network filesystem can show one file with another identity for a moment).
            // So is one under the name of a request the background lane holds: its batch's
            // answer is for the old file (discarded when it comes).
            if case .arrived(.valid(let task)) = event, let held = heldInFlight(task.id) ?? heldWaiting(task.id),
               held.path == task.requestPath, let old = held.identity, let newer = task.identity, !newer.isSameInstance(as: old) {
                // Queued or waiting, the latest save is kept too: the start finds the file
                // changed, ends the old task unsent, and this one is queued then. A start that
                // finds the old file after all (a network filesystem's passing view) drops it.
                replacedInFlight[task.id] = .valid(task)
            }
            // Saved again while waiting, and not valid now: kept alike, and refused when the
            // old task ends (the scheduler drops any arrival of an id it holds).
            if case .arrived(let intake) = event, case .invalid = intake, let held = heldWaiting(intake.id), held.path == intake.requestPath {
                replacedInFlight[intake.id] = intake
            }
            // Another file of an id the scheduler holds (`a.md` beside `a.json`): one file of
            // an id at a time, so it waits, and is queued when the held one ends.
            if case .arrived(let intake) = event, let held = heldFiles[intake.id], held.path != intake.requestPath,
               scheduler.state(of: intake.id) != nil {
                replacedInFlight[intake.id] = intake
                return
            }
            apply(scheduler.handle(event, now: Date().timeIntervalSince1970))
            switch event {
            case .arrived(let intake) where scheduler.state(of: intake.id) != nil:
                known.insert(intake.id)
                if heldFiles[intake.id] == nil {
                    var identity: FileIdentity?
                    if case .valid(let task) = intake { identity = task.identity }
                    heldFiles[intake.id] = (intake.requestPath, identity)
                }
            case .finalized(let id):
                journaledAwaitingOutcome[id] = nil
                forget(id)
            case .retry(let task, _):
                journaledAwaitingOutcome[task.id] = nil
            default:
                break
            }
        case .removed(let id, let path):
            if let held = heldFiles[id], held.path != path {
                if replacedInFlight[id]?.requestPath == path { replacedInFlight[id] = nil }
                return
            }
            // A later save of the removed file, kept for the old task's end, went with it.
            if replacedInFlight[id]?.requestPath == path { replacedInFlight[id] = nil }
            handle(.event(.requestRemoved(id: id)))
        case .leaseLost(let id):
            if let transfer = transfersByID[id] { end(transfer, as: .leaseLost) }
        case .claimed(let request, let claim, let rejoin):
            claimAnswered(request, claim, rejoin: rejoin)
        case .reconfigure(let newEndpoints, let newSettings):
            let now = Date().timeIntervalSince1970
            endpoints = newEndpoints
            settings = newSettings
            checkMulti(llms_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, newSettings.concurrency), "curl_multi_setopt(MAXCONNECTS)")
            let gates = TransferEngine.gates(newEndpoints, newSettings, active: scheduler.activeByEndpoint, now: now)
            scheduler.laneRouting = TransferEngine.laneRouting(newEndpoints, newSettings)
            apply(scheduler.reconfigure(concurrency: newSettings.concurrency, gates: gates, now: now))
            logger.info("configuration reloaded", ["endpoints": LogValue(newEndpoints.map(\.name).joined(separator: ",")),
                                                   "concurrency": "\(newSettings.concurrency)"])
        case .shutdown:
            apply(scheduler.handle(.drain, now: Date().timeIntervalSince1970))
            shutdownDeadline = TransferEngine.monotonic() + settings.shutdownGraceSeconds
            if !transfers.isEmpty {
                logger.info("waiting for transfers in flight", ["count": "\(transfers.count)", "grace_seconds": "\(settings.shutdownGraceSeconds)"])
            }
        }
    }

    /// The file of a task in flight (or claiming to start, or in the background lane), as
    /// it was read.
    private func heldInFlight(_ id: String) -> (path: String, identity: FileIdentity?)? {
        if let running = transfersByID[id]?.task ?? awaitingClaim[id] { return (running.requestPath, running.identity) }
        return scheduler.state(of: id) == .laned ? heldFiles[id] : nil
    }

    /// The file of a task queued or waiting for its next attempt, as it was read.
    private func heldWaiting(_ id: String) -> (path: String, identity: FileIdentity?)? {
        switch scheduler.state(of: id) {
        case .queued?, .deferred?: heldFiles[id]
        default: nil
        }
    }

    /// The scheduler let go of `id`: a file of the id that waited is queued now.
    private func forget(_ id: String) {
        known.remove(id)
        heldFiles[id] = nil
        if let newer = replacedInFlight.removeValue(forKey: id) { handle(.event(.arrived(newer))) }
    }

    /// Actions not performed yet, in order; see `apply`.
    private var pendingActions: [Scheduler.Action] = []
    private var applying = false

    /// Performs the scheduler's actions in order. Actions that arise while one is performed
    /// (a start that cannot go yet ends at once and frees its slot for the next queued task)
    /// are performed after it, by the outermost call, not from inside it: a daemon woken past
    /// its lease with three batches queued had every waiting line start the next one a call
    /// deeper, and 178 of them overflowed the engine thread's stack (SIGSEGV).
    private func apply(_ actions: [Scheduler.Action]) {
        pendingActions.append(contentsOf: actions)
        guard !applying else { return }
        applying = true
        defer {
            applying = false
            pendingActions.removeAll(keepingCapacity: true)
        }
        var next = 0
        while next < pendingActions.count {
            let action = pendingActions[next]
            next += 1
            perform(action)
        }
    }

    private func perform(_ action: Scheduler.Action) {
        switch action {
        case .start(let task, let endpoint):
            begin(task, endpointIndex: endpoint)
        case .reject(let id, let path, let problem):
            delegate.rejected(id, path, problem)
        case .completeEnded(let id, let path):
            delegate.alreadyEnded(id, path)
        case .cancelTransfer(let id):
            if let transfer = transfersByID[id] {
                end(transfer, as: .cancelled)
            } else if awaitingClaim[id] != nil {
                cancelledWhileClaiming.insert(id)
            }
        case .withdrawn(let id, let identity):
            forget(id)
            delegate.withdrawn(id, identity)
        case .noEndpoint(let task, let message):
            delegate.unservable(task, message)
        case .deferToLane(let task, let endpoint):
            handToLane(task, endpoint: endpoints[endpoint].name)
        case .rejoinLane(let task):
            handToLane(task, endpoint: nil)
        case .withdrawFromLane(let id):
            delegate.laneWithdrawn(id)
        case .requestLeft(let id):
            delegate.requestLeft(id)
        }
    }

    /// Ends a task that could not start; the outcome goes through the finisher like any other.
    private func endBeforeStart(_ task: TaskDescriptor, endpointIndex: Int, _ ending: AttemptOutcome.Ending) {
        apply(scheduler.handle(.transferEnded(id: task.id, feedback: EndpointFeedback(.neutral)), now: Date().timeIntervalSince1970))
        delegate.attemptEnded(AttemptOutcome(task: task, ending: ending, partial: nil, startedAt: Date(), endedAt: Date(),
                                             endpointIndex: endpointIndex, endpointName: endpoints[min(endpointIndex, endpoints.count - 1)].name))
    }

    /// The body made from a prompt file (a format that makes its body), from the file as it
    /// is now, which must still be the file intake validated; and the file's bytes, for
    /// the transcript.
    private func madeBody(_ task: TaskDescriptor, endpoint: Endpoint) throws -> (body: Transfer.Body, source: [UInt8]) {
        guard let read = RequestFile.read(path: task.requestPath, limit: settings.maxRequestBytes) else {
            throw SystemError(errno: ENOENT, call: "open", path: task.requestPath)
        }
        let loaded: RequestFile.Loaded
        switch read {
        case .success(let file): loaded = file
        case .failure(let problem) where problem.kind == .transient: throw SystemError(errno: EMFILE, call: "open", path: task.requestPath)
        case .failure(let problem): throw UploadRefusal(verdict: .refuse(problem))
        }
        if let validated = task.identity, !loaded.identity.isSameInstance(as: validated) {
            // Changed since intake (its content's fingerprint too): a new task, as for any
            // other change (`UploadCheck`).
            throw UploadRefusal(verdict: .replaced)
        }
        let format = RequestFormatRegistry.format(id: task.summary.format)
        switch format.prepare(loaded.bytes, context: settings.formats) {
        case .request(let summary, let made?):
            return (try memoryBody(made, summary: summary, endpoint: endpoint), loaded.bytes)
        case .request:
            throw UploadRefusal(verdict: .refuse(RequestProblem(.unreadable, "the \(format.id) format made no body")))
        case .draft:
            throw UploadRefusal(verdict: .replaced)
        case .invalid(let problem):
            // The same bytes were valid at intake: the configuration (its default_model) changed since.
            throw UploadRefusal(verdict: .refuse(problem))
        }
    }

    /// A body held in memory, with the endpoint's model and the usage member put in.
    private func memoryBody(_ bytes: [UInt8], summary: RequestSummary, endpoint: Endpoint) throws -> Transfer.Body {
        let usageMember = DialectRegistry.dialect(for: summary).usageMember
        if let model = endpoint.model, model != summary.model {
            guard var object = JSONObject.parse(Array(bytes[summary.body])) else {
                throw UploadRefusal(verdict: .refuse(RequestProblem(.invalidJSON, "the body is not a JSON object")))
            }
            object["model"] = model
            if summary.usageSplice != nil, let member = JSONObject.parse([UInt8(ascii: "{")] + usageMember.dropLast() + [UInt8(ascii: "}")]) {
                object.merge(member) { _, added in added }
            }
            return .memory(Array(try JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes])), offset: 0)
        }
        let body = summary.body
        guard let brace = summary.usageSplice else { return .memory(Array(bytes[body]), offset: 0) }
        return .memory(Array(bytes[body.lowerBound...brace]) + usageMember + Array(bytes[(brace + 1)..<body.upperBound]), offset: 0)
    }

    /// The body to send; for a body sent from the file, `file` receives the file, open.
    private func openBody(_ task: TaskDescriptor, endpoint: Endpoint, file: inout FileDescriptor?) throws -> Transfer.Body? {
        let usageMember = DialectRegistry.dialect(for: task.summary).usageMember
        if let model = endpoint.model, model != task.summary.model {
            // A model rewrite needs the body parsed; it is held in memory for this attempt.
            var object: [String: Any]
            if BatchLineRef(id: task.id) != nil {
                // A batch's line: its body alone, read in place from a file of any size.
                guard let parsed = JSONObject.parse(try readLineBody(task)) else { return nil }
                object = parsed
            } else {
                guard case .success(let loaded)? = RequestFile.read(path: task.requestPath, limit: settings.maxRequestBytes),
                      task.summary.body.upperBound <= loaded.bytes.count,
                      let parsed = JSONObject.parse(Array(loaded.bytes[task.summary.body])) else { return nil }
                // RequestFile.read compared fstat with lstat; this compares with what intake validated.
                if task.identity != nil, loaded.identity != task.identity {
                    throw UploadRefusal(verdict: UploadCheck.verify(validated: task.identity, current: loaded.identity, isRegularFile: true, links: 1))
                }
                object = parsed
            }
            object["model"] = model
            if task.summary.usageSplice != nil {
                // The dialect's member as a one-member object (its trailing comma dropped), merged in.
                guard let member = JSONObject.parse([UInt8(ascii: "{")] + usageMember.dropLast() + [UInt8(ascii: "}")]) else { return nil }
                object.merge(member) { _, added in added }
            }
            return .memory(Array(try JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes])), offset: 0)
        }
        let opened = try FileDescriptor.open(task.requestPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        // Opened by name again: it must still be the file intake validated.
        let info = try opened.fstat()
        let verdict = UploadCheck.verify(validated: task.identity, current: FileIdentity(info),
                                         isRegularFile: info.st_mode & S_IFMT == S_IFREG, links: UInt64(info.st_nlink))
        guard verdict == .same else { throw UploadRefusal(verdict: verdict) }
        let body = task.summary.body
        if BatchLineRef(id: task.id) != nil, body.count <= TransferEngine.smallBodyLimit {
            // A batch line's body is a small range of a large file: read at once and sent
            // from memory like a small request's, its file closed now, instead of a seek and
            // reads from libcurl's callback into an upload buffer of its own.
            return .memory(try lineBody(opened, task, usageMember: usageMember), offset: 0)
        }
        if task.summary.size <= TransferEngine.smallBodyLimit, let bytes = try readWhole(opened, expected: task.summary.size, path: task.requestPath) {
            // The same size and time are not the same content (`cp -p`, `touch -r`, two saves
            // in one tick of a coarse clock): what intake validated is known by its
            // fingerprint too. Before, a draft or broken JSON saved so was sent as it was.
            if let validated = task.identity?.contentHash, Fingerprint.hash(bytes) != validated { throw UploadRefusal(verdict: .replaced) }
            // A small body is read at once and its file closed (when `opened` ends here): ten
            // thousand requests starting together would otherwise hold ten thousand files
            // besides their sockets.
            guard let brace = task.summary.usageSplice else {
                return .memory(body == 0..<bytes.count ? bytes : Array(bytes[body]), offset: 0)
            }
            return .memory(Array(bytes[body.lowerBound...brace]) + usageMember + Array(bytes[(brace + 1)..<body.upperBound]), offset: 0)
        }
        // A large body goes from the file: what precedes the first byte taken from it
        // (the opening brace and the usage member), then `fileBytes` from `start`.
        let start: Int
        let prefix: [UInt8]
        if let brace = task.summary.usageSplice {
            start = brace + 1
            prefix = [UInt8(ascii: "{")] + usageMember
        } else if body == 0..<task.summary.size {
            file = consume opened
            return .file
        } else {
            start = body.lowerBound
            prefix = []
        }
        guard lseek(opened.rawValue, off_t(start), SEEK_SET) == off_t(start) else {
            throw SystemError(errno: errno, call: "lseek", path: task.requestPath)
        }
        file = consume opened
        return .spliced(prefix: prefix, sent: 0, fileBytes: body.upperBound - start)
    }

    /// A batch line's body from its file, already checked, with the usage member put in.
    private func lineBody(_ file: borrowing FileDescriptor, _ task: TaskDescriptor, usageMember: [UInt8]) throws -> [UInt8] {
        let body = task.summary.body
        let bytes = try Syscall.preadAll(file.rawValue, count: body.count, at: body.lowerBound, path: task.requestPath)
        guard bytes.count == body.count else {
            throw SystemError(errno: EIO, call: "pread (the batch file shrank since it was validated)", path: task.requestPath)
        }
        guard let brace = task.summary.usageSplice, body.contains(brace) else { return bytes }
        let at = brace - body.lowerBound
        return Array(bytes[...at]) + usageMember + Array(bytes[(at + 1)...])
    }

    /// A batch line's body, read from the batch file once it is checked to be the file
    /// intake validated.
    private func readLineBody(_ task: TaskDescriptor) throws -> [UInt8] {
        let file = try FileDescriptor.open(task.requestPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        let info = try file.fstat()
        let verdict = UploadCheck.verify(validated: task.identity, current: FileIdentity(info),
                                         isRegularFile: info.st_mode & S_IFMT == S_IFREG, links: UInt64(info.st_nlink))
        guard verdict == .same else { throw UploadRefusal(verdict: verdict) }
        let body = task.summary.body
        return try Syscall.preadAll(file.rawValue, count: body.count, at: body.lowerBound, path: task.requestPath)
    }

    /// Bodies up to this size are sent from memory.
    static let smallBodyLimit = 64 * 1024

    /// The whole file when it still has the size intake validated; nil (and the file
    /// rewound) otherwise, and the body is then streamed from the file as it is.
    private func readWhole(_ file: borrowing FileDescriptor, expected: Int, path: String) throws -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: expected + 1)
        var total = 0
        while total < bytes.count {
            let count = try bytes.withUnsafeMutableBytes { buffer in
                try Syscall.read(file.rawValue, into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]), path: path)
            }
            if count == 0 { break }
            total += count
        }
        if total == expected {
            bytes.removeLast()
            return bytes
        }
        guard lseek(file.rawValue, 0, SEEK_SET) == 0 else {
            throw SystemError(errno: errno, call: "lseek", path: path)
        }
        return nil
    }

    /// A task another daemon holds: forget it here; the watcher looks again later.
    private func skip(_ task: TaskDescriptor) {
        let now = Date().timeIntervalSince1970
        apply(scheduler.handle(.transferEnded(id: task.id, feedback: EndpointFeedback(.neutral)), now: now))
        apply(scheduler.handle(.finalized(id: task.id), now: now))
        known.remove(task.id)
    }

    private func begin(_ task: TaskDescriptor, endpointIndex: Int) {
        // A batch's line has no record and no lease of its own: its batch's journal is its
        // record, and exactly one daemon runs a batch.
        if let claimer, BatchLineRef(id: task.id) == nil {
            // The claim is made off the loop; the start goes on when its answer comes back.
            awaitingClaim[task.id] = task
            claimer.submit(LeaseClaimer.Request(task: task, purpose: .start(endpointIndex: endpointIndex)))
            return
        }
        prepareStart(task, endpointIndex: endpointIndex)
    }

    /// On a shared spool a request goes to the background lane only under its claim, held
    /// (and renewed) until it ends, as a start's is: unclaimed, two daemons would each batch
    /// it, and the finisher, not holding it, would discard the batch's answer.
    private func handToLane(_ task: TaskDescriptor, endpoint: String?) {
        guard let claimer, BatchLineRef(id: task.id) == nil else {
            delegate.deferred(task, endpoint)
            return
        }
        claimer.submit(LeaseClaimer.Request(task: task, purpose: .lane(endpoint: endpoint)))
    }

    private func laneClaimAnswered(_ task: TaskDescriptor, endpoint: String?, _ claim: LeaseManager.Claim) {
        let now = Date().timeIntervalSince1970
        guard scheduler.state(of: task.id) == .laned else {
            // Withdrawn while its claim was made: nothing of it runs here.
            if case .claimed = claim { leases?.release(task.id, ended: false) }
            return
        }
        switch claim {
        case .claimed:
            // A member of a remote batch this daemon follows finds its group in the lane
            // before any new group is formed (`BackgroundLane.join`).
            delegate.deferred(task, endpoint)
            return
        case .heldElsewhere:
            logger.debug("another daemon holds this request", id: task.id)
        case .failed(let reason):
            logger.warning("cannot claim the request; will look again", id: task.id, ["reason": LogValue(reason)])
        }
        apply(scheduler.handle(.finalized(id: task.id), now: now))
        known.remove(task.id)
        delegate.claimedElsewhere(task.requestPath)
    }

    /// A claim's answer, back on the loop. A start cancelled while it waited ends as a
    /// transfer cancelled at once would have.
    private func claimAnswered(_ request: LeaseClaimer.Request, _ claim: LeaseManager.Claim, rejoin: Bool) {
        let endpointIndex: Int
        switch request.purpose {
        case .lane(let endpoint):
            laneClaimAnswered(request.task, endpoint: endpoint, claim)
            return
        case .start(let index):
            endpointIndex = index
        }
        let task = request.task
        awaitingClaim[task.id] = nil
        let cancelled = cancelledWhileClaiming.remove(task.id) != nil
        switch claim {
        case .claimed where cancelled:
            endBeforeStart(task, endpointIndex: endpointIndex, .cancelled)
        case .claimed where rejoin:
            // Taken over from a daemon that died while its remote batch carried the request:
            // that batch answers it, so nothing is sent here (sent live, it was paid twice).
            logger.info("the request is in a remote batch this daemon follows; it goes back to it instead of starting", id: task.id)
            apply(scheduler.handle(.rejoinedLane(id: task.id), now: Date().timeIntervalSince1970))
            delegate.deferred(task, nil)
        case .claimed:
            prepareStart(task, endpointIndex: endpointIndex)
        case .heldElsewhere:
            logger.debug("another daemon holds this request", id: task.id)
            skip(task)
            delegate.claimedElsewhere(task.requestPath)
        case .failed(let reason):
            logger.warning("cannot claim the request; will look again", id: task.id, ["reason": LogValue(reason)])
            skip(task)
            // Looked at again soon, as one another daemon holds: with inotify, nothing else
            // would before the periodic rescan.
            delegate.claimedElsewhere(task.requestPath)
        }
    }

    /// Everything of a start after its claim: the checks, the body, the record of the
    /// start, the curl handle.
    private func prepareStart(_ task: TaskDescriptor, endpointIndex: Int) {
        let isBatchLine = BatchLineRef(id: task.id) != nil
        if let leases, let line = BatchLineRef(id: task.id) {
            let now = Date().timeIntervalSince1970
            if case .wait(let seconds) = TransferEngine.lineStart(line, leases: leases, now: now) {
                // Not sent, not an attempt: it waits until the keeper has renewed the batch's
                // claim or found it taken (the batch is then dropped, and the line with it).
                logger.debug("the batch's claim is past its lease time here; the line waits for its renewal", id: task.id)
                apply(scheduler.handle(.transferEnded(id: task.id, feedback: EndpointFeedback(.neutral)), now: now))
                apply(scheduler.handle(.retry(task, at: now + seconds), now: now))
                return
            }
        }
        if let reason = diskHealth.holdReason(layout, logger: logger) {
            // The answer could not be kept: the request waits, unsent, like one on a full disk.
            endBeforeStart(task, endpointIndex: endpointIndex, .diskError(reason))
            return
        }
        var lookup = TaskRecord.Lookup.none
        if let leases, !isBatchLine {
            lookup = TaskRecord.lookUp(layout, id: task.id)
            if case .unreadable(let reason) = lookup {
                // Not proof of an end, nor of its absence: another daemon may have just
                // replaced it. The claim goes back and the request is looked at again.
                logger.debug("the task record cannot be read; looking again later", id: task.id, ["reason": LogValue(reason)])
                leases.release(task.id, ended: false)
                skip(task)
                return
            }
        }
        if leases != nil, case .found(let record) = lookup, record.status == .done || record.status == .failed {
            // A claim won on a stale view of a shared folder: another daemon may have finished
            // this request (its file still shows in a client cache). A record that proves it
            // (`Recovery.decide`) stands and the request is not sent; its lease stays as a
            // tombstone, so that no other stale view claims it either. A done record whose
            // result never got its name (a daemon killed in between) proves nothing: the
            // request runs.
            var result: FileIdentity?
            do {
                result = try Syscall.exists(layout.result(task.id)) ? FileIdentity(try Syscall.lstat(layout.result(task.id))) : nil
            } catch {
                // Unreadable is not proof of an end: the request runs, as with no result.
                logger.debug("cannot look for the result; sending", id: task.id, ["reason": "\(error)"])
                result = nil
            }
            if Recovery.decide(record: record, identity: task.identity, resultInode: result?.inode,
                               resultModifiedNanoseconds: result?.modifiedNanoseconds) == .alreadyEnded {
                logger.debug("already ended elsewhere; not sent", id: task.id, ["status": LogValue(record.status.rawValue)])
                skip(task)
                // Its ending may be unfinished (the daemon that ended it was killed before it
                // removed the request): the clean-up finishes it under the claim still held,
                // and leaves the lease a tombstone.
                delegate.alreadyEnded(task.id, task.requestPath)
                return
            }
        }
        var task = task
        if !isBatchLine {
            if !previousRunCrashed { task.history = CrashGuard.ended(task.history) }
            if CrashGuard.mustFail(task.history) {
                endBeforeStart(task, endpointIndex: endpointIndex, .crashLoop(starts: task.history.unfinishedStarts))
                return
            }
        }
        let endpoint = endpoints[min(endpointIndex, endpoints.count - 1)]
        if let name = task.summary.endpoint, endpoint.name != name {
            // The endpoints were reloaded since the request was queued: never another one.
            apply(scheduler.handle(.transferEnded(id: task.id, feedback: EndpointFeedback(.neutral)), now: Date().timeIntervalSince1970))
            delegate.rejected(task.id, task.requestPath, RequestProblem(.unsupported, "\"endpoint: \(Logger.escape(name))\" is not the "
                + "endpoint it would go to since the configuration was reloaded; it was not sent"))
            return
        }
        let body: Transfer.Body
        var source: [UInt8]?
        // The request file a body sent from the file is read from; closed on every way out
        // below that does not hand it to the transfer.
        var bodyFile: FileDescriptor?
        do {
            if RequestFormatRegistry.format(id: task.summary.format).makesBody {
                (body, source) = try madeBody(task, endpoint: endpoint)
            } else {
                guard let opened = try openBody(task, endpoint: endpoint, file: &bodyFile) else {
                    endBeforeStart(task, endpointIndex: endpointIndex, .cancelled)
                    return
                }
                body = opened
            }
        } catch let error as SystemError where RequestFile.isGone(error.errno) {
            // Finished or withdrawn since intake saw it. On a shared spool another daemon
            // may have just finished it (killed before its claim said so): under the claim
            // still held, the finisher tells which, as for any withdrawal, and reports a
            // withdrawal only.
            if leases != nil {
                skip(task)
                delegate.withdrawn(task.id, task.identity)
            } else {
                endBeforeStart(task, endpointIndex: endpointIndex, .cancelled)
            }
            return
        } catch let refusal as UploadRefusal {
            switch refusal.verdict {
            case .refuse(let problem):
                apply(scheduler.handle(.transferEnded(id: task.id, feedback: EndpointFeedback(.neutral)), now: Date().timeIntervalSince1970))
                delegate.rejected(task.id, task.requestPath, problem)
            case .replaced, .same:
                guard BatchLineRef(id: task.id) == nil else {
                    // A batch's input changed under its lines: the batch runner ends the
                    // batch, and this line ends cancelled, as the lines never started do.
                    endBeforeStart(task, endpointIndex: endpointIndex, .cancelled)
                    return
                }
                // Saved again since intake (in place, or a new file renamed over it): not sent
                // as it is, and no outcome of its own. The old task lets go of the id (of its
                // claim too, with no tombstone that would bar the new save) and the file is
                // a new task: the read of it kept meanwhile, else one made now.
                logger.info("the request was saved again after it was validated; it is read again as a new task", id: task.id)
                leases?.release(task.id, ended: false)
                let kept = replacedInFlight[task.id]?.requestPath == task.requestPath
                apply(scheduler.handle(.transferEnded(id: task.id, feedback: EndpointFeedback(.neutral)), now: Date().timeIntervalSince1970))
                handle(.event(.finalized(id: task.id)))
                if !kept { delegate.readAgain(task.requestPath) }
            }
            return
        } catch let error as SystemError where error.isTransient {
            // Short of descriptors or memory: the machine's trouble, retried like a full disk.
            endBeforeStart(task, endpointIndex: endpointIndex, .diskError("\(error)"))
            return
        } catch {
            apply(scheduler.handle(.transferEnded(id: task.id, feedback: EndpointFeedback(.neutral)), now: Date().timeIntervalSince1970))
            delegate.rejected(task.id, task.requestPath, RequestProblem(.unreadable, "cannot open the request: \(error)"))
            return
        }
        // The file is the one intake read: a newer identity seen while it waited was a
        // passing view, not a save (a save would have changed what was opened).
        if replacedInFlight[task.id]?.requestPath == task.requestPath { replacedInFlight[task.id] = nil }
        var journaled = false
        if !isBatchLine {
            // The start is on disk before the request is sent: if the answer crashes the
            // daemon, the next run knows this request was in flight (`CrashGuard`). On a
            // local spool in the start journal; on a shared one as the task's record, which
            // every daemon reads, written only once the request is open: a request another
            // daemon has just finished and removed must not have its record overwritten.
            task.history = CrashGuard.starting(task.history)
            let record = TransferEngine.start(of: task).record
            do {
                if let startJournal, StartJournal.takes(recordless: task.recordless, history: task.history) {
                    do {
                        try startJournal.append(record, requestPath: task.requestPath, now: TransferEngine.monotonic(), notEnded: journaledNotEnded)
                        journaled = true
                    } catch {
                        // The journal saves a file per start; the record does the same work.
                        logger.debug("cannot append to the start journal; the start is recorded", id: task.id, ["reason": "\(error)"])
                    }
                }
                if !journaled { try record.write(layout, durable: false) }
            } catch {
                endBeforeStart(task, endpointIndex: endpointIndex, .diskError("recording the start of the attempt failed: \(error)"))
                return
            }
        }
        // A prompt file's stream: the `.partial` shows the answer's text, the raw events go aside.
        let textPartial = RequestFormatRegistry.format(id: task.summary.format).textPartial
        let partialPath = textPartial ? layout.rawEvents(task.id) : layout.partial(task.id)
        guard let handle = curl_easy_init() else {
            endBeforeStart(task, endpointIndex: endpointIndex, .transportError(code: 27, message: "libcurl could not create a handle"))
            return
        }
        let transfer = Transfer(task: task, endpointIndex: endpointIndex, endpointName: endpoint.name, handle: handle, body: body,
                                bodyFile: bodyFile,
                                // Past the budget the `.partial` is opened for each write: a long
                                // stream then costs one descriptor (its socket) instead of two.
                                holdsPartial: transfers.count < descriptorBudget, partialPath: partialPath,
                                textPath: textPartial ? layout.partial(task.id) : nil,
                                spillPath: SpoolLayout.temporary(for: layout.result(task.id)), fileMode: settings.fileMode,
                                remakeFolders: remakeFolders,
                                responseLimit: settings.maxResponseBytes, eventLimit: settings.maxEventBytes,
                                now: TransferEngine.monotonic())
        transfer.requestSource = source
        transfer.startJournaled = journaled
        // The answer's files are all made in `incoming`: the root and that folder.
        transfer.spoolElsewhere = { [layout] in layout.integrityProblem(of: [layout.incoming]) }
        transfer.needsFlush = { [unowned self] in unflushed.append($0) }
        if let leases {
            // Without locks (or beside a daemon without them), a claim is only as good as its
            // lease's time (`LeaseRules`); asked when it matters, since that can change.
            let claim = BatchLineRef(id: task.id).map { BatchClaimRules.claimID(batch: $0.batch) } ?? task.id
            transfer.mayReplaceFiles = { [leases] in
                !leases.claimsBoundByTime || (leases.writtenExpiry(claim) ?? 0) > Date().timeIntervalSince1970
            }
        }
        do {
            try configure(transfer, endpoint: endpoint)
            try CurlError.check(curl_multi_add_handle(multi, handle), "curl_multi_add_handle")
        } catch {
            curl_easy_cleanup(handle)
            curl_slist_free_all(transfer.headerList)
            transfer.closeBody()
            logger.error("libcurl refused the transfer's set-up", id: task.id, ["reason": "\(error)"])
            endBeforeStart(task, endpointIndex: endpointIndex, .transportError(code: (error as? CurlError)?.code ?? 2, message: "\(error)"))
            return
        }
        transfers[handle] = transfer
        transfersByID[task.id] = transfer
        if journaled { startJournal?.turnIfDue(inFlightCount: transfersByID.count, notEnded: journaledNotEnded) }
        logger.debug("upload started", id: task.id, ["endpoint": LogValue(endpoint.name), "attempt": "\(task.history.attempts.count + 1)",
                                                      "bytes": "\(transfer.bodySize)", "stream": "\(task.summary.stream)"])
    }

    /// libcurl's receive buffer for a streamed answer (its default is 16 KiB).
    static let streamReceiveBuffer = 8 * 1024

    /// The most HTTP/2 streams libcurl puts on one connection.
    static let maxStreamsPerConnection = 100

    private func configure(_ transfer: Transfer, endpoint: Endpoint) throws {
        let handle = transfer.handle
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        let dialect = DialectRegistry.dialect(for: transfer.task.summary)
        try CurlHandle.set(handle, CURLOPT_URL, string: endpoint.url(for: dialect))
        try CurlHandle.set(handle, CURLOPT_POST, 1)
        try CurlHandle.set(handle, CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(transfer.bodySize))
        try CurlHandle.set(handle, CURLOPT_NOSIGNAL, 1)
        try CurlHandle.set(handle, CURLOPT_TCP_KEEPALIVE, 1)
        try CurlHandle.set(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeoutSeconds * 1000))
        try CurlHandle.set(handle, CURLOPT_TIMEOUT_MS, Int(settings.requestTimeoutSeconds * 1000))
        try CurlHandle.set(handle, CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(transfer.errorBuffer))
        transfer.caFile = endpoint.caFile
        if let file = endpoint.caFile { try CurlHandle.set(handle, CURLOPT_CAINFO, string: file) }
        let https = endpoint.isHTTPS
        try CurlHandle.set(handle, CURLOPT_HTTP_VERSION, TransferEngine.curlVersion(endpoint.httpVersion.wire(https: https)))
        if endpoint.httpVersion.connectionPerTransfer(https: https) {
            try CurlHandle.set(handle, CURLOPT_FRESH_CONNECT, 1)
            try CurlHandle.set(handle, CURLOPT_FORBID_REUSE, 1)
        }
        if endpoint.httpVersion.waitsForMultiplexing(https: https) {
            // Not behind a handshake that hangs: each such start tries a connection of its own.
            if !scheduler.handshakeOverdue(endpoint: transfer.endpointIndex, now: Date().timeIntervalSince1970) {
                try CurlHandle.set(handle, CURLOPT_PIPEWAIT, 1)
            }
            // Which connection each stream is on paces the starts (ConnectionPacing): reported
            // to the scheduler after libcurl returns, never from inside its callback.
            let id = transfer.task.id
            transfer.placed = { [unowned self] port in placements.append((id, port)) }
        }
        if let leases, let line = BatchLineRef(id: transfer.task.id) {
            let claim = BatchClaimRules.claimID(batch: line.batch)
            let id = transfer.task.id
            transfer.mayGo = { [unowned self, unowned leases] in
                // Read once: the lease time the line is judged by is the one it is told by.
                let expiry = leases.writtenExpiry(claim)
                guard BatchLineStart.decide(leaseFilesOnly: leases.claimsBoundByTime, leaseExpiresAt: expiry, now: LeaseManager.now()) == .start
                else { return false }
                // Judged once libcurl returns, by `socketAction`.
                passedLastCheck.append((id, expiry ?? .infinity))
                return true
            }
        }
        if transfer.placed != nil || transfer.mayGo != nil {
            try CurlHandle.set(handle, CURLOPT_PREREQDATA, pointer: me)
            try CurlHandle.setPrerequest(handle) { context, _, _, _, localPort in
                let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
                if let mayGo = transfer.mayGo, !mayGo() {
                    transfer.heldBack = true
                    return CURL_PREREQFUNC_ABORT
                }
                if transfer.placed != nil { transfer.localPort = Int(localPort) }
                transfer.placed?(Int(localPort))
                return CURL_PREREQFUNC_OK
            }
        }
        if let folder = settings.caDirectory { try CurlHandle.set(handle, CURLOPT_CAPATH, string: folder) }
        if let bytes = transfer.takeMemoryBody() {
            // Copied by libcurl with the size set above; ours is freed when this returns.
            try CurlHandle.copyPostFields(handle, bytes)
            transfer.bodyHandedToCurl = true
        } else {
            try CurlHandle.set(handle, CURLOPT_READDATA, pointer: me)
            try CurlHandle.set(handle, CURLOPT_READFUNCTION, callback: { buffer, size, count, context in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().readBody(into: buffer!, capacity: size * count)
            })
        }
        if transfer.task.summary.stream {
            // Events are a few hundred bytes: a smaller receive buffer per stream, thousands held at once.
            try CurlHandle.set(handle, CURLOPT_BUFFERSIZE, TransferEngine.streamReceiveBuffer)
        }
        try CurlHandle.set(handle, CURLOPT_WRITEDATA, pointer: me)
        try CurlHandle.set(handle, CURLOPT_WRITEFUNCTION, callback: { buffer, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
                .writeBody(buffer!, count: size * count, now: TransferEngine.monotonic())
        })
        try CurlHandle.set(handle, CURLOPT_HEADERDATA, pointer: me)
        try CurlHandle.set(handle, CURLOPT_HEADERFUNCTION, callback: { buffer, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveHeader(buffer!, count: size * count)
        })
        var lines = ["Content-Type: application/json", transfer.task.summary.stream ? "Accept: text/event-stream" : "Accept: application/json",
                     "Expect:"]  // no 100-continue round trip before the body
        lines += dialect.headers(apiKey: endpoint.apiKey?.value, anthropicVersion: endpoint.anthropicVersion)
        for line in lines {
            // nil is libcurl out of memory; the list so far stays the transfer's to free.
            guard let longer = curl_slist_append(transfer.headerList, line) else {
                throw CurlError(call: "curl_slist_append", code: Int32(CURLE_OUT_OF_MEMORY.rawValue), text: "out of memory")
            }
            transfer.headerList = longer
        }
        try CurlHandle.set(handle, CURLOPT_HTTPHEADER, list: transfer.headerList)
    }

    /// Writes what each transfer received during this turn to its `.partial`: one write per
    /// transfer and turn, whatever number of reads and chunks libcurl made of it. A write
    /// that fails ends its attempt as a disk error.
    private func flushPartials() {
        guard !unflushed.isEmpty else { return }
        let written = unflushed
        unflushed.removeAll(keepingCapacity: true)
        for transfer in written where transfers[transfer.handle] === transfer {
            pacing.transferReceived(turnBytes: transfer.turnBytes)
            receivedThisTurn.append(transfer)
            do {
                try transfer.flushPartial()
            } catch {
                transfer.diskError = error as? SystemError ?? SystemError(errno: EIO, call: "write", path: transfer.partialPath)
                end(transfer, as: .diskError("\(error)"))
            }
        }
    }

    private func collectCompleted() {
        if !placements.isEmpty {
            let now = Date().timeIntervalSince1970
            let placed = placements
            placements.removeAll(keepingCapacity: true)
            for (id, connection) in placed { apply(scheduler.handle(.connected(id: id, connection: connection), now: now)) }
        }
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                  let transfer = transfers[handle] else { continue }
            if transfer.heldBack {
                holdBack(transfer)
                continue
            }
            end(transfer, as: TransferEngine.ending(of: transfer, code: llms_curlmsg_result(message), settings: settings))
        }
    }

    static func curlVersion(_ wire: HTTPVersion.Wire) -> Int {
        switch wire {
        case .http1_1: return Int(CURL_HTTP_VERSION_1_1)
        case .http2OverTLS: return Int(CURL_HTTP_VERSION_2TLS)
        case .http2PriorKnowledge: return Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
    }

    static func ending(of transfer: Transfer, code: CURLcode, settings: Settings) -> AttemptOutcome.Ending {
        if transfer.overLimit { return .responseTooLarge(limit: transfer.responseLimit) }
        if transfer.eventTooLarge { return .eventTooLarge(limit: transfer.eventLimit) }
        if let diskError = transfer.diskError { return .diskError("\(diskError)") }
        if code == CURLE_OK { return .response(status: CurlHandle.responseCode(transfer.handle)) }
        var text = String(cString: transfer.errorBuffer)
        if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
        if let readError = transfer.readError { text += " (reading the request: \(readError))" }
        if code == CURLE_OPERATION_TIMEDOUT {
            let connecting = text.hasPrefix("Connection time") || text.hasPrefix("Resolving time") || text.contains("connect")
            return .timedOut(connecting ? .connect : .total, message: text)
        }
        if code == CURLE_SSL_CACERT_BADFILE {
            text += "; the CA file \(transfer.caFile ?? "of the system") cannot be read as PEM certificates now (it was at start): retried"
        } else if code == CURLE_PEER_FAILED_VERIFICATION {
            text += "; " + TransferEngine.certificateHint(text, caFile: transfer.caFile, caDirectory: settings.caDirectory)
        }
        return .transport(code: Int32(code.rawValue), message: text, responseStarted: transfer.firstByteAt != nil)
    }

    /// What to do about a certificate the check refused: the CA only matters when the
    /// issuer was unknown; an expired certificate or one for another name is the server's.
    static func certificateHint(_ message: String, caFile: String?, caDirectory: String?) -> String {
        let lowered = message.lowercased()
        if lowered.contains("expired") || lowered.contains("not yet valid") {
            return "the server's certificate is out of its validity dates (or this machine's clock is wrong); no CA setting changes that"
        }
        if lowered.contains("subject name") || lowered.contains("host name") || lowered.contains("does not match") {
            return "the server's certificate is for another name than the endpoint's base_url; no CA setting changes that"
        }
        return caHint(caFile: caFile, caDirectory: caDirectory)
    }

    /// What a failed certificate check was checked against, and how to name another CA.
    static func caHint(caFile: String?, caDirectory: String?) -> String {
        var used: [String] = []
        if let file = caFile { used.append("CA file \(file)") }
        if let folder = caDirectory { used.append("CA folder \(folder)") }
        if used.isEmpty {
            // CURLVERSION_NOW is a macro Swift cannot import; the tenth layout has cainfo and capath.
            let info = curl_version_info(CURLVERSION_TENTH)?.pointee
            let file = info?.cainfo.map { String(cString: $0) } ?? "none built in"
            let folder = info?.capath.map { String(cString: $0) }
            used.append("the system's CA file \(file)" + (folder.map { " and folder \($0)" } ?? ""))
        }
        return "checked against \(used.joined(separator: " and ")); for a private CA set ca_file in the config, or SSL_CERT_FILE / CURL_CA_BUNDLE (a file) or SSL_CERT_DIR (a folder) in the daemon's environment"
    }

    /// Ends every attempt whose idle timer or total deadline has passed. libcurl enforces
    /// the deadline too; whichever notices first ends the attempt.
    private func sweepIdle() {
        let now = TransferEngine.monotonic()
        guard now - lastIdleSweep >= TransferEngine.idleSweepSeconds else { return }
        lastIdleSweep = now
        lookAtQuietTransfers(now: now)
        let idle = settings.idleTimeoutSeconds
        let total = settings.requestTimeoutSeconds
        let expired = transfers.values.compactMap { transfer in
            transfer.clock.expired(at: now, idleLimit: idle, totalLimit: total).map { (transfer, $0) }
        }
        for (transfer, timer) in expired {
            let message = timer == .idle
                ? String(format: "no content for %.1f s (idle_timeout_seconds %g); %lld bytes had arrived",
                         transfer.clock.idleSeconds(at: now), idle, transfer.bytesReceived)
                : String(format: "the attempt passed request_timeout_seconds (%g); %lld bytes had arrived", total, transfer.bytesReceived)
            end(transfer, as: .timedOut(timer, message: message))
        }
    }

    /// Whether the transfer's response came over HTTP/2 or later (one connection, many
    /// streams); an error of libcurl's answer leaves 0, which is no.
    private static func isMultiplexed(_ transfer: Transfer) -> Bool {
        var version = 0
        _ = llms_easy_getinfo_long(transfer.handle, CURLINFO_HTTP_VERSION, &version)
        return version == Int(CURL_HTTP_VERSION_2_0) || version == Int(CURL_HTTP_VERSION_3)
    }

    /// Quiet transfers that have received bytes and may share a connection (their port is
    /// known), each at most once a second: a multiplexed
    /// one's connection is run (once per connection), and one whose connection is gone ends
    /// as a transport failure, retried as such (`StalledStreamWatch`).
    private func lookAtQuietTransfers(now: Double) {
        var kicks: Set<Int32> = []
        var orphans: [Transfer] = []
        for transfer in transfers.values
        where transfer.localPort != nil
            && transfer.stallWatch.isDue(now: now, quietSeconds: transfer.clock.idleSeconds(at: now), receivedAny: transfer.bytesReceived > 0) {
            let socket = transfer.localPort.flatMap { socketsByPort[$0] }.flatMap { endedSockets.contains($0) ? nil : $0 }
            switch transfer.stallWatch.look(now: now, hasConnection: socket != nil, multiplexed: TransferEngine.isMultiplexed(transfer)) {
            case .nothing:
                break
            case .kick:
                if let socket { kicks.insert(socket) }
            case .end:
                orphans.append(transfer)
            }
        }
        // After the look, not during it: running a connection can end transfers.
        var running: Int32 = 0
        for socket in kicks { socketAction(socket, 0, &running, "curl_multi_socket_action(quiet connection)") }
        for transfer in orphans where transfers[transfer.handle] === transfer {
            logger.warning("the connection under the answer closed and libcurl left the attempt waiting; it ends as a transport failure",
                           id: transfer.task.id, ["bytes_received": "\(transfer.bytesReceived)"])
            end(transfer, as: .transportError(code: Int32(CURLE_RECV_ERROR.rawValue),
                                              message: "the connection closed under the answer after \(transfer.bytesReceived) bytes (its stream was left waiting)"))
        }
    }

    /// Runs libcurl on `socket`, then tells of the batch lines whose request may have gone
    /// after their claim's lease time.
    private func socketAction(_ socket: curl_socket_t, _ mask: Int32, _ running: inout Int32, _ call: String) {
        checkMulti(curl_multi_socket_action(multi, socket, mask, &running), call)
        guard !passedLastCheck.isEmpty, let leases else { return }
        let returnedAt = LeaseManager.now()
        for (id, until) in passedLastCheck
        where BatchLineStart.mayHaveGoneLate(leaseFilesOnly: leases.claimsBoundByTime, checkedUntil: until, returnedAt: returnedAt) {
            // No check before a send can close this window: the daemon stopped between them.
            logger.warning("the batch line passed its last check before its claim's lease time, but libcurl returned only after it: "
                           + "the daemon was paused or starved, and its request may have gone after another daemon took the batch over, "
                           + "which then sends the line again (it may be paid twice)",
                           id: id, ["lease_time": LogValue(until.isFinite ? Timestamp.string(Date(timeIntervalSince1970: until)) : "none"),
                                    "returned_at": LogValue(Timestamp.string(Date(timeIntervalSince1970: returnedAt)))])
        }
        passedLastCheck.removeAll(keepingCapacity: true)
    }

    /// A multi-handle call that failed is logged, once a minute at most: the loop goes on,
    /// and the transfers it touches end by their own errors or timers.
    private func checkMulti(_ code: CURLMcode, _ call: String) {
        guard code != CURLM_OK else { return }
        let now = TransferEngine.monotonic()
        guard now - lastMultiErrorLog >= 60 else { return }
        lastMultiErrorLog = now
        logger.warning("libcurl's multi interface reported an error", ["call": LogValue(call), "code": "\(code.rawValue)",
                                                                     "reason": LogValue(String(cString: curl_multi_strerror(code)))])
    }

    /// Detaches a transfer and passes its outcome (and its `.partial` descriptor) on.
    private func end(_ transfer: Transfer, as given: AttemptOutcome.Ending) {
        var ending = given
        if case .transportError(let code, _) = given, code == Int32(CURLE_PARTIAL_FILE.rawValue),
           let port = transfer.localPort, let socket = socketsByPort[port] {
            // On a multiplexed connection a partial stream means the connection ended under it.
            if TransferEngine.isMultiplexed(transfer) { endedSockets.insert(socket) }
        }
        if ending != .leaseLost && ending != .cancelled && transfer.diskError == nil && !transfer.overLimit {
            // The finisher reads the answer (or the error body) from the `.partial`: it must be whole.
            pacing.transferReceived(turnBytes: transfer.turnBytes)
            do {
                try transfer.flushPartial()
            } catch {
                transfer.diskError = error as? SystemError ?? SystemError(errno: EIO, call: "write", path: transfer.partialPath)
                if case .response = ending { ending = .diskError("\(error)") }
            }
        }
        let handle = transfer.handle
        if transfer.bodyHandedToCurl { transfer.bytesSent = CurlHandle.bytesUploaded(handle, atMost: Int64(transfer.bodySize)) }
        checkMulti(curl_multi_remove_handle(multi, handle), "curl_multi_remove_handle")
        curl_easy_cleanup(handle)
        curl_slist_free_all(transfer.headerList)
        transfer.closeBody()
        transfers[handle] = nil
        transfersByID[transfer.task.id] = nil
        let stream = transfer.finishStream()
        let now = Date()
        let ended = TransferEngine.monotonic()
        metrics.attempt(endpoint: transfer.endpointName, result: ending.metricsLabel, sent: transfer.bytesSent, received: transfer.bytesReceived,
                        firstByteSeconds: transfer.firstByteAt.map { $0 - transfer.clock.startedAt },
                        totalSeconds: ended - transfer.clock.startedAt)
        let feedback = EndpointFeedback.from(ending, headers: transfer.headers, now: now)
        apply(scheduler.handle(.transferEnded(id: transfer.task.id, feedback: feedback), now: now.timeIntervalSince1970))
        if feedback.outcome == .retryableFailure || feedback.pauseSeconds != nil { logNewEndpointWaits(now: now.timeIntervalSince1970) }
        var outcome = AttemptOutcome(
            task: transfer.task, ending: ending, partial: transfer.handOffPartial(), headers: transfer.headers,
            bytesSent: transfer.bytesSent, bytesReceived: transfer.bytesReceived,
            startedAt: transfer.startedAt, endedAt: now, endpointIndex: transfer.endpointIndex, endpointName: transfer.endpointName,
            stream: stream, requestSource: transfer.requestSource, rawPath: transfer.textPath != nil ? transfer.partialPath : nil)
        outcome.heldBody = transfer.takeHeldAnswer()
        if transfer.startJournaled { journaledAwaitingOutcome[transfer.task.id] = TransferEngine.start(of: transfer.task) }
        delegate.attemptEnded(outcome)
    }

    /// The journaled starts not ended: the transfers in flight and the outcomes not written
    /// yet, for a new generation of the start journal.
    private func journaledNotEnded() -> [StartJournalFile.Start] {
        // An entry whose task the scheduler no longer holds has ended whichever way.
        journaledAwaitingOutcome = journaledAwaitingOutcome.filter { scheduler.state(of: $0.key) != nil }
        return transfersByID.values.filter(\.startJournaled).map { TransferEngine.start(of: $0.task) } + Array(journaledAwaitingOutcome.values)
    }

    private static func start(of task: TaskDescriptor) -> StartJournalFile.Start {
        (TaskRecord(id: task.id, status: .active, request: task.identity, history: task.history), task.requestPath)
    }

    /// Whether a batch line may go now, by its batch's claim as this daemon last wrote it:
    /// asked when the line is handed to libcurl and again just before its request goes.
    private static func lineStart(_ line: BatchLineRef, leases: LeaseManager, now: Double) -> BatchLineStart.Decision {
        BatchLineStart.decide(leaseFilesOnly: leases.claimsBoundByTime,
                              leaseExpiresAt: leases.writtenExpiry(BatchClaimRules.claimID(batch: line.batch)), now: now)
    }

    /// A batch line held back by `mayGo` before its request went: no attempt, nothing
    /// sent. It waits as one the gate in `prepareStart` holds, until the keeper renews the
    /// batch's claim (it then goes) or finds it taken (the batch is dropped, the line with it).
    private func holdBack(_ transfer: Transfer) {
        detach(transfer)
        let now = Date().timeIntervalSince1970
        logger.debug("the batch's claim passed its lease time before the line went; it waits for its renewal", id: transfer.task.id)
        apply(scheduler.handle(.transferEnded(id: transfer.task.id, feedback: EndpointFeedback(.neutral)), now: now))
        apply(scheduler.handle(.retry(transfer.task, at: now + BatchLineStart.waitSeconds), now: now))
    }

    /// Takes a transfer that never produced an outcome out of libcurl and the engine, and
    /// removes what it had written.
    private func detach(_ transfer: Transfer) {
        let handle = transfer.handle
        checkMulti(curl_multi_remove_handle(multi, handle), "curl_multi_remove_handle")
        curl_easy_cleanup(handle)
        curl_slist_free_all(transfer.headerList)
        transfer.closeBody()
        transfer.discardSpill()
        transfer.closePartial()
        logger.bestEffort("removing a stopped transfer's partial", id: transfer.task.id) { try Syscall.unlinkIfPresent(transfer.partialPath) }
        transfer.closeText()
        if let text = transfer.textPath {
            logger.bestEffort("removing a stopped transfer's partial", id: transfer.task.id) { try Syscall.unlinkIfPresent(text) }
        }
        transfers[handle] = nil
        transfersByID[transfer.task.id] = nil
    }

    /// At the end of the grace period: stop what is still running. Requests stay in
    /// `outgoing`; the next run starts them again from zero.
    private func abortAll() {
        for transfer in Array(transfers.values) {
            detach(transfer)
            leases?.release(transfer.task.id, ended: false)
            logger.info("transfer stopped by shutdown; it will restart on the next run", id: transfer.task.id)
        }
        transfers.removeAll()
        transfersByID.removeAll()
    }

    /// Each endpoint's wait now; one log line for each that began since the last look, so
    /// the cool-down after a failure is logged when it starts, not at the next status write.
    @discardableResult
    private func logNewEndpointWaits(now wall: Double) -> [NamedEndpointWait] {
        let named = zip(endpoints, scheduler.endpointWaits(now: wall)).compactMap { endpoint, wait in
            wait.map { NamedEndpointWait(endpoint: endpoint.name, wait: $0) }
        }
        for wait in named where !lastWaits.contains(wait) && wait.wait.cause != .ownRateLimit {
            // The endpoint's own rate limit is the configuration at work, not news.
            if wait.wait.cause == .coolingDown { metrics.cooldown(endpoint: wait.endpoint) }
            let until = LogValue(Timestamp.string(Date(timeIntervalSince1970: wait.wait.until)))
            if let failures = wait.wait.failures {
                logger.warning("endpoint waiting", ["endpoint": LogValue(wait.endpoint), "cause": LogValue(wait.wait.cause.rawValue), "until": until,
                                                    "failures": "\(failures)", "reason": LogValue(wait.message)])
            } else {
                logger.warning("endpoint waiting", ["endpoint": LogValue(wait.endpoint), "cause": LogValue(wait.wait.cause.rawValue), "until": until,
                                                    "reason": LogValue(wait.message)])
            }
        }
        lastWaits = named
        return named
    }

    private func publishSnapshot() {
        let counts = scheduler.counts
        metrics.setGauges(queued: counts.queued, inFlight: counts.transferring, deferred: counts.deferred)
        let now = TransferEngine.monotonic()
        var live: [LiveTransfer]?
        if now - lastLivePublish >= 1 {
            lastLivePublish = now
            live = transfers.values.map {
                LiveTransfer(id: $0.task.id, startedAt: $0.startedAt, bytesReceived: $0.bytesReceived, events: $0.events,
                             attempt: $0.task.history.attempts.count + 1, endpoint: $0.endpointName)
            }
        }
        var waits: [NamedEndpointWait]?
        if live != nil {
            let wall = Date().timeIntervalSince1970
            let named = logNewEndpointWaits(now: wall)
            waits = named
            var inFlight: [String: Int] = [:]
            for (index, count) in scheduler.activeByEndpoint where index < endpoints.count { inFlight[endpoints[index].name, default: 0] += count }
            metrics.setEndpointGauges(names: endpoints.map(\.name), inFlight: inFlight,
                                      waits: Dictionary(named.map { ($0.endpoint, $0.wait.cause.rawValue) }) { first, _ in first })
        }
        let endpointCount = endpoints.count
        var views: [RequestWaitJudge.EndpointView]?
        if live != nil {
            let wall = Date().timeIntervalSince1970
            let active = scheduler.activeByEndpoint
            views = scheduler.gates.enumerated().map { index, gate in
                RequestWaitJudge.EndpointView(name: gate.name, api: gate.api, concurrency: gate.concurrency, inFlight: active[index] ?? 0,
                                              wait: gate.wait(now: wall))
            }
        }
        let concurrency = scheduler.concurrency
        snapshotBox.withLock {
            $0.queued = counts.queued
            $0.deferred = counts.deferred
            $0.transferring = counts.transferring
            $0.finishing = counts.finishing
            $0.laned = counts.laned
            if let live { $0.inFlight = live }
            if let waits { $0.endpointWaits = waits }
            if let views { $0.endpoints = views }
            $0.endpointCount = endpointCount
            $0.concurrency = concurrency
        }
    }
}

/// The file opened for an upload is not the one intake validated.
struct UploadRefusal: Error {
    let verdict: UploadCheck.Verdict
}
