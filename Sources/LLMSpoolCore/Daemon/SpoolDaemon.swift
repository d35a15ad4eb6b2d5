import CCurl
import Foundation
import Glibc
import Synchronization

/// The running daemon: watcher -> scheduler and transfers -> finisher, wired together.
public final class SpoolDaemon: Sendable {
    private let layout: SpoolLayout
    private let totals = TotalsKeeper()
    private let watcher: Watcher
    private let engine: TransferEngine
    private let finisher: Finisher
    private let pool: WorkerPool
    private let committer: GroupCommitter
    private let batches: BatchRunner
    private let lane: BackgroundLane
    private let hooks: HookRunner
    private let logger: Logger
    private let notifier: SystemdNotifier
    private let leases: LeaseManager?
    private let control: ControlReader
    /// How a success is committed here, decided once at start (`PublicationPlan.CommitOrder`).
    private let commitOrder: PublicationPlan.CommitOrder
    public let metrics: Metrics
    /// Whether the last probe write failed: shown by the metrics as a hold.
    private let diskHealth: DiskHealth
    private let statusStop = Atomic<Bool>(false)
    /// The `flock` that keeps a second daemon without leases off this spool.
    private let spoolLock = Mutex<DescriptorOwner?>(nil)
    /// The device and inode of the file `spoolLock` holds locked.
    private let spoolLockFile = Mutex<(device: UInt64, inode: UInt64)?>(nil)
    /// The same `flock` on the spool's root folder, which `rm -rf state` cannot take away.
    private let spoolRootLock = Mutex<DescriptorOwner?>(nil)
    private let statusStopped = DispatchSemaphore(value: 0)
    /// What `start` started, stopped in reverse by `stop`.
    private let services = Mutex(ServiceGroup([]))
    /// Threads that write outcomes (the benchmark's disk-ceiling probe uses as many).
    public static let finisherThreads = 4
    /// Set to `lease-files` in the environment, claims on a shared spool are lease files
    /// whatever the filesystem's locks (for tests of a spool without locks).
    public static let leaseFilesVariable = "LLMSPOOL_TEST_CLAIMS"
    /// A number (1 to 1,000,000) in the environment replaces the lane's backlog limit for a
    /// batch file's feed (tests: a small file reaches it).
    public static let laneBacklogVariable = "LLMSPOOL_TEST_LANE_BACKLOG"

    /// The batch runner's settings: the config's, its lines routed as the endpoints say.
    static func batchSettings(_ config: Config, _ endpoints: [Endpoint]) -> BatchRunner.Settings {
        var settings = BatchRunner.Settings(config)
        settings.routing = TransferEngine.laneRouting(endpoints, TransferEngine.Settings(config))
        if let text = ProcessInfo.processInfo.environment[SpoolDaemon.laneBacklogVariable], let limit = Int(text), (1...1_000_000).contains(limit) {
            settings.laneBacklogLimit = limit
        }
        return settings
    }

    /// `onReport` is called on a worker thread each time a task ends (or is postponed).
    public init(config: Config, endpoints: [Endpoint], logger: Logger, notifier: SystemdNotifier = SystemdNotifier(environment: [:]),
                onReport: (@Sendable (TaskReport) -> Void)? = nil) throws {
        if let failure = SpoolDaemon.initializeCurl { throw ConfigError(failure) }
        // Made first, then pinned: nothing is written through a root that is not this one.
        let unpinned = SpoolLayout(root: config.spool, groupReadable: config.groupReadable)
        // Before anything is made through a folder that is a link (or a file).
        if let problem = unpinned.integrityProblem() { throw ConfigError(problem) }
        try unpinned.create()
        let spoolID: String?
        do {
            spoolID = try SpoolIDFile.readOrMake(unpinned, logger: logger)
        } catch {
            logger.warning("cannot read or make the spool's id: if its filesystem is mounted again, the daemon holds the spool until a restart",
                           ["path": LogValue(unpinned.spoolIDFile), "reason": "\(error)"])
            spoolID = nil
        }
        let layout = try unpinned.pinnedNow(spoolID: spoolID)
        // fsync waits on the disk, not the CPU: more threads than cores let the filesystem
        // merge their flushes into fewer journal commits.
        let pool = WorkerPool(name: "finisher", threads: SpoolDaemon.finisherThreads)
        let known = KnownTasks()
        let metrics = Metrics()
        let polling = WatchMode.resolve(config.watchMode, path: config.spool).mode == .poll
        let leases = (config.leases ?? polling) ? LeaseManager(layout: layout, hostID: config.hostID, seconds: config.leaseSeconds, logger: logger) : nil
        // Hooks owed are noted on a spool of one daemon: on a shared one, another daemon's
        // start would take a note for a hook still queued here (see Hooks in README).
        let hooks = HookRunner(settings: config.hooks, layout: layout, logger: logger, notesOwed: leases == nil)
        let diskHealth = DiskHealth()
        // Decided once per spool: the probe needs `incoming`, made above.
        let (commitOrder, orderReason) = PublicationPlan.CommitOrder.choose(sharedSpool: leases != nil, probe: ResultMarkProbe.run(layout))
        logger.info(commitOrder == .resultMarked ? "results commit with one fsync, marked with their request"
                                                 : "results commit with two fsyncs, result then record",
                    ["commit_order": LogValue(commitOrder.rawValue), "reason": LogValue(orderReason)])
        let finisher = Finisher(layout: layout, logger: logger, retry: config.retry, endpointAPIs: endpoints.map(\.api), metrics: metrics, leases: leases,
                                diskHealth: diskHealth, formats: config.formatContext, commitOrder: commitOrder,
                                report: { report in
                                    hooks.handle(report)
                                    // A hook's own report repeats an outcome counted already.
                                    guard report.hook != .alone else { return }
                                    switch report.outcome {
                                    case .succeeded: metrics.outcome("done")
                                    case .failed: metrics.outcome("failed")
                                    case .cancelled: metrics.outcome("cancelled")
                                    case .deferred: break
                                    }
                                    onReport?(report)
                                })
        finisher.redact(secrets: endpoints.compactMap { $0.apiKey?.value })
        finisher.noteHooks(hooks.notes)
        // The engine and its delegate refer to each other; the box breaks the knot.
        let engineBox = Mutex<TransferEngine?>(nil)
        let post: @Sendable (Scheduler.Event) -> Void = { event in engineBox.withLock { $0 }?.post(event) }
        let committer = GroupCommitter(finisher: finisher, post: post)
        // The batch runner is made after the lane, which asks it which batches it runs.
        let runnerBox = Mutex<BatchRunner?>(nil)
        let lane = BackgroundLane(layout: layout, endpoints: endpoints, settings: BackgroundLane.Settings(config), finisher: finisher,
                                  logger: logger, leases: leases, runsBatch: { name in runnerBox.withLock { $0 }?.runs(batch: name) ?? false },
                                  post: post)
        var engineDelegate = TransferEngine.Delegate(
                attemptEnded: { outcome in
                    pool.submit {
                        switch finisher.prepare(outcome) {
                        case .ended(let event): post(event)
                        case .success(let prepared): committer.submit(prepared)
                        }
                    }
                },
                rejected: { id, path, problem in pool.submit { post(finisher.reject(id: id, requestPath: path, problem: problem)) } },
                alreadyEnded: { id, path in pool.submit { post(finisher.completeEnded(id: id, requestPath: path)) } },
                withdrawn: { id, identity in pool.submit { finisher.withdrawn(id: id, identity: identity) } },
                unservable: { task, message in pool.submit { post(finisher.unservable(task: task, message: message)) } })
        engineDelegate.deferred = { task, endpoint in lane.deferred(task, endpoint: endpoint) }
        engineDelegate.laneWithdrawn = { id in lane.withdrawn(id: id) }
        engineDelegate.laneMember = { id, tookOver in lane.memberClaimed(id, tookOver: tookOver) }
        // The watcher is made after the engine, which must know where to send this.
        let watcherBox = Mutex<Watcher?>(nil)
        engineDelegate.claimedElsewhere = { path in watcherBox.withLock { $0 }?.claimedElsewhere(path: path) }
        engineDelegate.readAgain = { path in watcherBox.withLock { $0 }?.readAgain(path: path) }
        engineDelegate.requestLeft = { id in finisher.requestLeft(id: id) }
        let engine = try TransferEngine(
            layout: layout, endpoints: endpoints, settings: TransferEngine.Settings(config), known: known, metrics: metrics,
            diskHealth: diskHealth, leases: leases, delegate: engineDelegate, logger: logger)
        engineBox.withLock { $0 = engine }
        self.lane = lane
        let batchSettings = SpoolDaemon.batchSettings(config, endpoints)
        let batches = BatchRunner(layout: layout, settings: batchSettings, logger: logger, metrics: metrics, leases: leases, post: post,
                                  onEnd: { report in
                                      hooks.handleBatch(report)
                                  },
                                  laneBacklog: { lane.backlog }, adoptLaneGroups: { lane.adoptUnfollowed() },
                                  laneGroupElsewhere: { lane.groupElsewhereCarriesLines(of: $0) }, laneBatchLost: { lane.batchLost($0) })
        finisher.batches.withLock { $0 = batches }
        runnerBox.withLock { $0 = batches }
        batches.noteHooks(hooks.notesBatches)
        var watcherDelegate = Watcher.Delegate(found: { post(.arrived($0)) }, removed: { id, path in engineBox.withLock { $0 }?.removed(id: id, path: path) })
        watcherDelegate.foundBatch = { batches.found($0) }
        watcherDelegate.removedBatch = { batches.removed($0) }
        var watcherSettings = Watcher.Settings(config)
        watcherSettings.markedResults = commitOrder == .resultMarked
        self.watcher = Watcher(layout: layout, settings: watcherSettings, known: known, metrics: metrics, leases: leases,
                               delegate: watcherDelegate, logger: logger)
        watcherBox.withLock { [watcher] in $0 = watcher }
        self.batches = batches
        self.layout = layout
        self.engine = engine
        self.finisher = finisher
        self.pool = pool
        self.committer = committer
        self.hooks = hooks
        self.metrics = metrics
        self.diskHealth = diskHealth
        self.notifier = notifier
        self.leases = leases
        self.control = ControlReader(layout: layout, shared: leases != nil, logger: logger) { [engine] event in engine.post(event) }
        self.logger = logger
        self.commitOrder = commitOrder
    }

    /// libcurl's global set-up is not thread-safe: done once, before any transfer thread.
    /// nil, or why libcurl could not set itself up (then no transfer could work).
    private static let initializeCurl: String? = {
        let code = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return code == CURLE_OK ? nil : "curl_global_init failed: \(String(cString: curl_easy_strerror(code))) (code \(code.rawValue))"
    }()

    /// `stopping` is asked while the start waits for space on a full disk: true ends the
    /// wait with `StartAbandoned`.
    public func start(stopping: @Sendable () -> Bool = { false }) throws {
        try layout.create()
        // Refused at start rather than held for ever: a folder that is a link (or a file).
        if let problem = try layout.integrityProblem() ?? layout.crossDeviceProblem() { throw ConfigError(problem) }
        // A request in flight counts toward the crash guard only when this daemon's
        // predecessor died of a crash: a kill -9 or a power loss is not the request's doing.
        let marker = layout.state + "/.crashed"
        engine.previousRunCrashed = CrashMarker.isPresent(markerPath: marker)
        if engine.previousRunCrashed { logger.warning("the previous run of the daemon crashed") }
        warnIfOpenToEveryone()
        if let leases {
            try lockSpool(shared: true)
            // Tests of a spool without locks set this; no user setting asks for it.
            let choice = ProcessInfo.processInfo.environment[SpoolDaemon.leaseFilesVariable] == "lease-files"
                ? leases.useLeaseFiles(reason: "\(SpoolDaemon.leaseFilesVariable) asks for lease files") : leases.chooseMethod()
            logger.info(choice.method == .locks ? "claims are held under file locks" : "claims are lease files only",
                        ["method": LogValue(choice.method.rawValue), "reason": LogValue(choice.reason)])
            let reclaimed = leases.reclaimDeadIncarnations()
            if !reclaimed.isEmpty {
                logger.info("took back the claims of this host's earlier run", ["requests": "\(reclaimed.count)"])
            }
            // A local run's start journal is not this kind of spool's: its starts are not counted.
            StartJournalFile.drop(layout: layout, logger: logger)
        } else {
            try lockSpool(shared: false)
            // Before the watcher looks at records: the starts the last run left unended become theirs.
            let recorded = StartJournalFile.replay(layout: layout, previousRunCrashed: engine.previousRunCrashed, logger: logger)
            if recorded > 0 {
                logger.info(engine.previousRunCrashed ? "requests in flight at the crash are counted against the crash guard"
                                                      : "requests in flight when the last run ended keep their first_seen", ["requests": "\(recorded)"])
            }
        }
        // Consumed only now: a start killed before this point counts the crash again.
        _ = CrashMarker.consume(markerPath: marker)
        CrashMarker.install(markerPath: marker)
        removeLeftovers()
        // Before the watcher: a record written again here is what the scan would look at.
        if commitOrder == .resultMarked { try markRun(stopping: stopping) }
        SpoolDaemon.raiseDescriptorLimit()
        if let leases {
            logger.info("claiming requests with leases", ["owner": LogValue(leases.owner), "lease_seconds": "\(leases.seconds)"])
        }
        let group = makeServices()
        do {
            try services.withLock { $0 = group; try $0.start() }
        } catch {
            let service = services.withLock { $0.failedToStart } ?? "a service"
            logger.error("cannot start; what had started is stopped", ["service": LogValue(service), "reason": "\(error)"])
            throw error
        }
        notifier.send("READY=1")
        logger.info("watching", ["outgoing": LogValue(layout.outgoing)])
    }

    /// The power-loss pass and this run's mark, durable before anything commits. On a full
    /// disk (a restart after a crash, a reboot) the start waits for space, as a running
    /// daemon's intake does, instead of exiting for a supervisor to restart it in a loop.
    private func markRun(stopping: @Sendable () -> Bool) throws {
        var waiting = false
        while true {
            do {
                try PowerLossScan.run(layout: layout, logger: logger)
                if waiting {
                    logger.info("the spool can be written again; starting")
                    metrics.setUnwritable(false)
                }
                return
            } catch let error as SystemError where error.errno == ENOSPC || error.errno == EDQUOT {
                if !waiting {
                    logger.error("the spool's disk is full; the daemon starts once this run's mark can be written", ["path": LogValue(layout.runMark),
                                                                                                                   "reason": "\(error)"])
                    waiting = true
                    // The metrics listen already: a start waiting for space is a hold.
                    metrics.setUnwritable(true)
                }
                try waitForSpace(stopping: stopping)
            }
        }
    }

    /// Waits until the spool's filesystem has more room than now, or `startRetrySeconds`
    /// passed (a quota or the inodes may be what ran out, which free bytes do not show):
    /// the power-loss pass reads every recent result again, too much to repeat each half
    /// second on a large spool.
    private func waitForSpace(stopping: @Sendable () -> Bool) throws {
        let freeAtFailure = freeBytesOfSpool()
        // A filesystem that cannot tell its room is tried again sooner.
        let patience = freeAtFailure == nil ? 5 : SpoolDaemon.startRetrySeconds
        let started = TransferEngine.monotonic()
        while true {
            // Type=notify: the start is alive, only waiting (systemd would kill it at TimeoutStartSec).
            notifier.send("EXTEND_TIMEOUT_USEC=5000000\nSTATUS=waiting for space on the spool's disk")
            if stopping() { throw StartAbandoned() }
            usleep(500_000)
            if TransferEngine.monotonic() - started >= patience {
                logger.debug("the start tries again", ["reason": LogValue("\(Int(patience)) s passed")])
                return
            }
            if let before = freeAtFailure, let now = freeBytesOfSpool(), now > before {
                logger.debug("the start tries again", ["reason": "the spool's disk has more room", "free_bytes": "\(now)"])
                return
            }
        }
    }

    /// How long a start waiting for space goes without trying again when free bytes stay the same.
    static let startRetrySeconds = 30.0

    private func freeBytesOfSpool() -> UInt64? {
        logger.bestEffortValue("reading the spool's free space") { try Syscall.freeBytes(path: layout.root) }
    }

    /// A start that a stop request ended while it waited (`start(stopping:)`).
    public struct StartAbandoned: Error, CustomStringConvertible {
        public var description: String { "stopped while waiting for space on the spool's disk" }
    }

    /// The daemon's parts in the order they start; they stop in the reverse order, so each
    /// one stops while what it hands work to still runs: intake first (the watcher, then
    /// the control files and the background lane, which feed the engine), then the engine,
    /// which drains its transfers into the finisher's pool and the group committer, then
    /// the batches those commit into, the hooks their reports start, and last the lease
    /// keeper (claims stay fresh until every outcome is written) and the status writer.
    /// The lane starts before the watcher: a member found again must find its group.
    private func makeServices() -> ServiceGroup {
        var services: [any Service] = [
            StartStopService("totals", start: { [self] in totals.start(query: SpoolQuery(layout: layout), metrics: metrics) }),
            StartStopService("status", start: { [self] in startStatusWriter() }, stop: { [self] in
                statusStop.store(true, ordering: .relaxed)
                statusStopped.wait()
            }),
        ]
        if let leases {
            services.append(StartStopService("lease keeper", start: { [engine, batches, lane] in
                leases.startKeeper(lost: { id in
                    if let name = BatchClaimRules.batchName(ofClaim: id) {
                        batches.leaseLost(name)
                    } else if let group = RemoteGroupClaims.group(ofClaim: id) {
                        lane.groupLost(group)
                    } else {
                        engine.leaseLost(id)
                    }
                })
            },
                                             stop: { leases.stopKeeper() }))
        }
        services += [
            // Before anything new ends: the hooks a daemon that died owed run first.
            StartStopService("hooks", start: { [hooks] in hooks.recoverOwed() }, stop: { [hooks] in hooks.finish() }),
            StartStopService("batches", start: { [batches] in batches.start() }, stop: { [batches] in batches.finish() }),
            StartStopService("group committer", stop: { [committer] in committer.finish() }),
            StartStopService("finisher", stop: { [pool] in pool.finish() }),
            StartStopService("transfer engine", start: { [engine] in engine.start() }, stop: { [engine] in engine.shutdown() }),
            StartStopService("background lane", start: { [lane] in lane.start() }, stop: { [lane] in lane.finish() }),
            StartStopService("control", start: { [control] in control.start() }, stop: { [control] in control.stop() }),
            StartStopService("watcher", start: { [watcher] in try watcher.start() }, stop: { [watcher] in watcher.stop() }),
        ]
        return ServiceGroup(services)
    }

    /// Rewrites `state/.daemon.json` once a second, on a thread of its own.
    private func startStatusWriter() {
        let roster = leases.map { DaemonRoster.path(layout, host: $0.hostID, pid: getpid()) }
        if roster != nil {
            do { try Syscall.mkdir(DaemonRoster.folder(layout), mode: layout.directoryMode) } catch let error as SystemError where error.errno == EEXIST {} catch {
                logger.warning("cannot create the daemons folder; status will not list this daemon", ["reason": "\(error)"])
            }
            if let leases { DaemonRoster.removeDeadIncarnations(layout, host: leases.hostID, myPID: getpid(), logger: logger) }
        }
        NamedThread.start("status") { [self] in
            var lastIDLook = TransferEngine.monotonic()
            // Rewritten each second: a full disk would log a line a second for as long as it lasts.
            var statusFailures = FailureRun()
            func informational(_ path: String, _ write: () throws -> Void) {
                do {
                    try write()
                    let ended = statusFailures.succeeded()
                    if ended > 0 { self.logger.info("the daemon's status is written again", ["path": LogValue(path), "failures": "\(ended)"]) }
                } catch {
                    if statusFailures.failed() {
                        self.logger.warning("an informational write failed; carrying on", ["reason": "\(error)", "failures_in_a_row": "\(statusFailures.count)"])
                    }
                }
            }
            while !statusStop.load(ordering: .relaxed) {
                // Nothing of the daemon's is written through names that lead outside the
                // spool (`SpoolLayout.integrityProblem`): no lock file, roster entry or live status there.
                let elsewhere = layout.integrityProblem()
                metrics.setHeldElsewhere(elsewhere != nil)
                if elsewhere == nil {
                    let held = finisher.heldStarts.takeAll()
                    if !held.isEmpty {
                        logger.debug("requests held while the spool's folders were not its own are released now", ["requests": "\(held.count)"])
                    }
                    // One whose retry is not posted yet is due when it comes (`Scheduler.Event.releaseHeld`).
                    if !held.isEmpty { engine.post(.releaseHeld(ids: held)) }
                }
                metrics.setUnwritable(diskHealth.probeFailed)
                // This thread alone moves the pin, once it holds the new mount's locks.
                if let pin = layout.rootPin as? SharedRootPin {
                    if let proposed = pin.proposed {
                        takeMountedAgain(pin, at: proposed)
                    } else if elsewhere == nil, TransferEngine.monotonic() - lastIDLook >= SpoolDaemon.spoolIDLookSeconds {
                        lastIDLook = TransferEngine.monotonic()
                        SpoolIDFile.keep(layout, pin: pin, logger: logger)
                    }
                }
                if let elsewhere {
                    if notifier.enabled {
                        notifier.send("STATUS=held: \(elsewhere)")
                        // Held is alive: a watchdog left unfed would have systemd kill the
                        // daemon, and its restart make a new spool under an unmounted disk.
                        if notifier.watchdogInterval != nil && metrics.healthy() { notifier.send("WATCHDOG=1") }
                    }
                    usleep(UInt32(min(notifier.watchdogInterval ?? 1, 1) * 1_000_000))
                    continue
                }
                keepSpoolLock()
                let snapshot = engine.snapshot
                if let roster, let leases {
                    let entry = DaemonRoster.Entry(host: leases.hostID, pid: getpid(), updatedAt: Date(), queued: snapshot.queued,
                                                   deferred: snapshot.deferred, inFlight: snapshot.transferring)
                    informational(roster) { try DurableFile.replace(entry.encoded(), at: roster, mode: layout.fileMode) }
                }
                // A batch's lines are shown as its counts, not one by one.
                var status = LiveStatus(pid: getpid(), updatedAt: Date(), queued: snapshot.queued, deferred: snapshot.deferred,
                                        inFlight: snapshot.inFlight.filter { BatchLineRef(id: $0.id) == nil })
                status.endpointWaits = snapshot.endpointWaits
                status.endpointCount = snapshot.endpointCount
                status.endpoints = snapshot.endpoints
                status.concurrency = snapshot.concurrency
                status.totals = totals.current(metrics)
                // In flight means transferring, as for requests; the rest of a batch's window is queued.
                var transferring: [String: Int] = [:]
                for transfer in snapshot.inFlight { if let line = BatchLineRef(id: transfer.id) { transferring[line.batch, default: 0] += 1 } }
                status.batches = batches.progress.map { progress in
                    var progress = progress
                    progress.inFlight = transferring[progress.name] ?? 0
                    return progress
                }
                status.remoteBatches = lane.progress
                status.intakePaused = watcher.intakePause.withLock { $0 }
                metrics.remoteBatches(status.remoteBatches)
                // Kept writable on a full disk, when an operator needs `status` most. Not on a
                // shared spool, whose daemons all write this one file: written in place, their
                // writes would interleave.
                informational(LiveStatus.path(layout)) {
                    let bytes = status.encoded()
                    if leases == nil {
                        try DurableFile.replaceKeepingRoom(bytes, at: LiveStatus.path(layout), mode: layout.fileMode,
                                                           reserve: max(64 << 10, 2 * bytes.count))
                    } else {
                        try DurableFile.replace(bytes, at: LiveStatus.path(layout), mode: layout.fileMode)
                    }
                }
                if notifier.enabled {
                    notifier.send("STATUS=\(snapshot.queued) queued, \(snapshot.transferring) in flight, \(snapshot.deferred) waiting to retry")
                    // The watchdog is fed only while both loops show life.
                    if notifier.watchdogInterval != nil && metrics.healthy() { notifier.send("WATCHDOG=1") }
                }
                usleep(UInt32(min(notifier.watchdogInterval ?? 1, 1) * 1_000_000))
            }
            if layout.integrityProblem() == nil {
                logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(LiveStatus.path(layout)) }
                if let roster { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(roster) } }
            }
            statusStopped.signal()
        }
    }

    /// Stops intake, drains transfers for the grace period, writes every pending outcome.
    public func stop() {
        notifier.send("STOPPING=1")
        // The group is dropped once stopped: its services' closures hold the daemon.
        services.withLock {
            $0.stop()
            $0 = ServiceGroup([])
        }
        logger.info("stopped")
    }

    /// Applies a reloaded configuration: endpoints, limits, timers and retry rules. The
    /// spool, the watcher's settings and logging keep their values until a restart.
    public func reload(config: Config, endpoints: [Endpoint]) {
        finisher.reconfigure(retry: config.retry, endpointAPIs: endpoints.map(\.api))
        finisher.redact(secrets: endpoints.compactMap { $0.apiKey?.value })
        let batchSettings = SpoolDaemon.batchSettings(config, endpoints)
        batches.reconfigure(batchSettings)
        lane.reconfigure(endpoints: endpoints, settings: BackgroundLane.Settings(config))
        engine.reconfigure(endpoints: endpoints, settings: TransferEngine.Settings(config))
    }

    /// A drop folder every user can write to, without the sticky bit, lets anyone delete
    /// (and so cancel) anyone's request.
    func warnIfOpenToEveryone() {
        guard let info = logger.bestEffortValue("looking at outgoing's permissions", { try Syscall.lstat(layout.outgoing) }) else { return }
        if info.st_mode & 0o002 != 0 && info.st_mode & S_ISVTX == 0 {
            logger.warning("outgoing is writable by every user without the sticky bit: anyone can delete or replace requests; run: chmod +t \(layout.outgoing)")
        }
    }

    /// Without leases, one daemon per spool and host: two would each send every request.
    /// An `flock` on `state/.lock`, held for the daemon's life and dropped by the kernel
    /// when it dies.
    /// `shared`: this daemon claims with leases. It holds the lock shared, as every daemon with
    /// leases does, and a daemon without leases holds it alone: either refuses to start beside
    /// the other kind, which would send every request a daemon with leases has claimed.
    func lockSpool(shared: Bool) throws {
        try lockRoot(shared: shared)
        try lockFile(shared: shared)
    }

    /// The root folder is locked first, and a daemon refused there never touches the lock
    /// file: the file alone was not enough, as a lock file removed (with all of `state`)
    /// let a second daemon lock a new one and send beside the first until the first noticed
    /// (30 of 30 requests in flight sent twice). A folder that cannot be locked (some
    /// network and FUSE filesystems) leaves the lock file alone to do it, as before.
    private func lockRoot(shared: Bool) throws {
        let root = layout.root
        let folder: FileDescriptor
        do {
            folder = try FileDescriptor.open(root, O_RDONLY | O_DIRECTORY)
        } catch {
            // A root the daemon may enter but not read (mode 0711, another owner): the lock
            // file does it alone, as before.
            logger.info("the spool's folder cannot be opened to lock it; its lock file alone keeps a second daemon off", ["path": LogValue(root),
                                                                                                                          "reason": "\(error)"])
            return
        }
        try lockFolder(folder, shared: shared)
        // Held open for the daemon's life, locked or not: a FUSE filesystem (sshfs) keeps
        // the root's inode number only while the kernel holds the inode, and the pin is
        // that number; an unmount that is not lazy is refused (EBUSY) while it is open.
        let lock = DescriptorOwner(folder)
        spoolRootLock.withLock { $0 = lock }
    }

    /// How often the status thread looks at `state/.spool-id` (`SpoolIDFile.keep`).
    static let spoolIDLookSeconds = 10.0

    /// The spool's share was found mounted again at `place` (`SpoolRootPin`): its root and
    /// lock file there are locked as the old ones were, and only then does the pin move, so
    /// that nothing is sent through the new mount while a second daemon could start there
    /// (the old mount's locks mean nothing on the new one). Another daemon that locked it
    /// meanwhile would send every request beside this one: this one stops.
    private func takeMountedAgain(_ pin: SharedRootPin, at place: SpoolRootIdentity.Place) {
        let shared = leases != nil
        do {
            // Opened, then looked at: the folder locked must be the one proposed.
            let folder = try FileDescriptor.open(layout.root, O_RDONLY | O_DIRECTORY)
            let info = try folder.fstat()
            guard SpoolRootIdentity.Place(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) == place else {
                pin.dropProposal()
                return
            }
            try lockFolder(folder, shared: shared)
            try lockFile(shared: shared)
            let lock = DescriptorOwner(folder)
            spoolRootLock.withLock { $0 = lock }
            pin.move(to: place)
            logger.warning("the spool's filesystem was mounted again: the same spool (by its id) at a new place; carrying on",
                           ["path": LogValue(layout.root), "now": LogValue(place.description)])
            // Requests held while the move was pending wait the longest backoff otherwise.
            engine.post(.sendNow(id: nil))
        } catch let refusal as ConfigError {
            logger.error("another daemon locked this spool on its new mount; this one stops, or both would send every request",
                         ["path": LogValue(layout.root), "reason": LogValue(refusal.description)])
            kill(getpid(), SIGTERM)
        } catch {
            logger.warning("cannot lock the spool on its new mount yet; trying again in a second", ["path": LogValue(layout.root), "reason": "\(error)"])
            pin.dropProposal()
        }
    }

    /// Locks the spool's root folder, open as `folder`; another daemon holding it is a
    /// refusal, a filesystem that cannot lock folders leaves the lock file to do it alone.
    private func lockFolder(_ folder: borrowing FileDescriptor, shared: Bool) throws {
        do {
            try Syscall.flock(folder.rawValue, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB, path: layout.root)
        } catch let error as SystemError where error.errno == EWOULDBLOCK {
            throw lockRefusal(shared: shared, locked: layout.root)
        } catch {
            logger.info("the spool's folder cannot be locked here; its lock file alone keeps a second daemon off", ["path": LogValue(layout.root),
                                                                                                                   "reason": "\(error)"])
        }
    }

    private func lockRefusal(shared: Bool, locked path: String) -> ConfigError {
        if shared {
            return ConfigError("a daemon without leases is running on \(layout.root) (\(path) is locked): it sends every request it finds, "
                + "so a daemon with leases beside it would send each one again: set \"leases\": true in every daemon's config, or run only one")
        }
        return ConfigError("another llmspool daemon is running on \(layout.root) (\(path) is locked); without leases only one may run "
            + "per spool, or each request is sent by both: stop the other one, or set \"leases\": true in every daemon's config")
    }

    private func lockFile(shared: Bool) throws {
        let path = layout.lock
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: layout.fileMode)
        do {
            try Syscall.flock(file.rawValue, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB, path: path)
        } catch let error as SystemError where error.errno == EWOULDBLOCK {
            throw lockRefusal(shared: shared, locked: path)
        } catch let error as SystemError where shared {
            // A filesystem that cannot lock (some FUSE and network ones): the daemons of a
            // shared spool then have their leases alone, as on other machines they do anyway.
            logger.info("the spool's lock file cannot be locked here; a daemon without leases beside this one would not be noticed",
                        ["path": LogValue(path), "reason": "\(error)"])
            return
        }
        let info = try file.fstat()
        let lock = DescriptorOwner(file)
        spoolLock.withLock { $0 = lock }
        spoolLockFile.withLock { $0 = (UInt64(info.st_dev), UInt64(info.st_ino)) }
    }

    /// `state/.lock` deleted (with all of `state`, say) would let a second daemon start
    /// beside this one, and each would send every request. Looked at once a second: when
    /// the path no longer leads to the file this daemon holds locked, the file there now is
    /// locked instead; when another daemon already holds that one, this daemon stops.
    func keepSpoolLock() {
        guard let held = spoolLockFile.withLock({ $0 }) else { return }
        let path = layout.lock
        do {
            let info = try Syscall.lstat(path)
            if UInt64(info.st_dev) == held.device && UInt64(info.st_ino) == held.inode { return }
        } catch let error as SystemError where error.errno == ENOENT {
        } catch {
            logger.warning("cannot look at the spool's lock file", ["path": LogValue(path), "reason": "\(error)"])
            return
        }
        layout.recreateMissingFolders(logger: logger)
        do {
            try lockFile(shared: leases != nil)
            logger.warning("the spool's lock file was removed or replaced; it is locked again", ["path": LogValue(path)])
        } catch let error as ConfigError {
            logger.error("another daemon locked this spool after its lock file was removed; this one stops, or both would send every request",
                            ["path": LogValue(path), "reason": LogValue(error.description)])
            kill(getpid(), SIGTERM)
        } catch {
            logger.warning("cannot lock the spool again; trying again in a second", ["path": LogValue(path), "reason": "\(error)"])
        }
    }

    /// Before anything runs, every `.partial` and hidden temporary of this daemon's is from
    /// an attempt that died with an earlier run, or from a write that never finished:
    /// neither may ever become a result. Their requests are still in `outgoing` and run
    /// again. On a shared spool, those of requests another live daemon holds are its own,
    /// and stay.
    func removeLeftovers() {
        var removed = 0
        var kept = 0
        for directory in [layout.incoming, layout.failed, layout.state] {
            let names: [String]
            do {
                names = try Syscall.listDirectory(directory)
            } catch {
                logger.warning("cannot list a folder for leftovers of an earlier run; they stay", ["reason": "\(error)"])
                continue
            }
            for name in names {
                // A batch's output grows across restarts (its journal says how far); its
                // lines' answers are leftovers like any attempt's.
                if name.hasSuffix(SpoolLayout.batchSuffix + SpoolLayout.partialSuffix) { continue }
                // The claim whose holder writes the file: a line's (or a batch's end's) is its
                // batch's, any other its request's. On a shared spool, one another live daemon
                // holds is written now.
                let id: String
                if let batch = SpoolLayout.batchOfLineTemporary(name) ?? SpoolLayout.batchOfOwnTemporary(name) {
                    id = BatchClaimRules.claimID(batch: batch)
                } else if let request = LeaseRules.leftoverID(name) {
                    id = request
                } else {
                    continue
                }
                var unlinked = false
                let remove = { [logger] in
                    do {
                        try Syscall.unlink("\(directory)/\(name)")
                        unlinked = true
                    } catch let error as SystemError where error.errno == ENOENT {
                    } catch {
                        logger.warning("cannot remove a leftover of an earlier run", id: id, ["reason": "\(error)"])
                    }
                }
                if let leases {
                    if !leases.removeLeftover(of: id, remove) { kept += 1 }
                } else {
                    remove()
                }
                if unlinked { removed += 1 }
            }
        }
        removed += HeldCopyLeftovers(layout: layout, logger: logger).remove()
        if removed > 0 || kept > 0 {
            logger.info("removed leftovers of an earlier run", ["files": "\(removed)", "kept_for_other_daemons": "\(kept)"])
        }
    }

    /// Thousands of streams need thousands of descriptors: take the hard limit.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
