import Foundation
import Glibc
import Synchronization

/// The background lane: requests that may wait, sent through the provider's own Batch API
/// on one thread, `lane`. The scheduler hands it each deferrable request; it groups them
/// (`LaneGrouper`), records each group's intent durably before anything remote exists,
/// and walks each group through `RemoteBatchMachine`'s steps over libcurl: upload, create,
/// poll, download, split, publish. Each member's outcome goes through the finisher like
/// a live attempt's, so `incoming/<id>.json` is the object a live call produces. After a
/// restart, every intent record resumes where `RemoteBatchRecovery` says. Every decision
/// is the model's; this class only does the I/O and keeps the time.
public final class BackgroundLane: @unchecked Sendable {
    // @unchecked Sendable holds because every stored `var` is read and written only on the
    // lane's thread (and in `start`, before it runs); other threads reach it through `inbox`.

    /// The lane's settings from the config.
    public struct Settings: Sendable {
        public var limits: LaneGrouper.Limits
        public var pollSeconds: Double
        public var pollMaxSeconds: Double
        /// `batch_deadline_seconds`: a remote batch running longer is cancelled.
        public var deadlineSeconds: Double
        /// The longest Retry-After honoured (`max_retry_after_seconds`).
        public var maxRetryAfterSeconds: Double
        var http: LaneHTTP.Settings

        public init(_ config: Config) {
            limits = config.batchLimits
            pollSeconds = config.batchPollSeconds
            pollMaxSeconds = config.batchPollMaxSeconds
            deadlineSeconds = config.batchDeadlineSeconds
            maxRetryAfterSeconds = config.retry.maxRetryAfterSeconds
            let (perMember, overflow) = config.maxResponseBytes.addingReportingOverflow(BackgroundLane.lineEnvelopeBytes)
            http = LaneHTTP.Settings(connectTimeoutSeconds: config.connectTimeoutSeconds, idleTimeoutSeconds: config.idleTimeoutSeconds,
                                     caFile: config.caFile, caDirectory: config.caDirectory, minFreeBytes: config.minFreeBytes,
                                     answerBytesPerMember: overflow ? .max : perMember)
        }
    }

    /// One remote batch as `status` shows it.
    public struct Progress: Sendable, Equatable {
        public var group: String
        public var endpoint: String
        public var state: String
        public var batchID: String?
        public var remoteStatus: String?
        public var members: Int
        /// The provider's request counts at the last poll; nil before one.
        public var total: Int?
        public var completed: Int?
        public var failed: Int?
    }

    enum Message {
        /// Indirect: the inbox can hold a whole group's worth of requests the thread has not
        /// taken yet, and an array of tasks inline keeps its capacity (a task's size a slot).
        indirect case deferred(TaskDescriptor, endpoint: String?)
        case withdrawn(String)
        case reconfigure([Endpoint], Settings)
        /// A group this daemon now follows: its earlier run's, or a dead daemon's, adopted.
        case adopted(RemoteIntent)
        /// The group's claim is another daemon's now (this one was paused past its lease).
        case lost(String)
        /// The claim of the batch file of this name is another daemon's now: its runner here
        /// dropped it, and withdraws its lines in flight next.
        case batchLost(String)
        case stop
    }

    /// What an output line holds besides its answer (ids, status, request id), at most.
    static let lineEnvelopeBytes: Int64 = 64 << 10

    /// How long a commit of successes may grow before its folders are fsynced.
    static let commitBatch = 256

    // Not private: the extension for batch files' lines (BackgroundLane+BatchLines) reads them.
    let layout: SpoolLayout
    private let store: RemoteIntentStore
    /// The groups followed here and by the other daemons of a shared spool.
    private let registry: RemoteGroupRegistry
    private let sharedSpool: Bool
    /// The claims of a shared spool: a member's is let go when its group's is lost.
    private let leases: LeaseManager?
    let finisher: Finisher
    let post: @Sendable (Scheduler.Event) -> Void
    let logger: Logger
    private let inbox = Mutex<[Message]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let progressBox = Mutex<[Progress]>([])
    private let running = Atomic<Bool>(false)
    /// Set by `finish`: a group's steps that follow each other without a wait stop at the
    /// next one (the record on disk is at or behind the remote truth, and resumes), and an
    /// exchange under way is aborted.
    private let stop: LaneStopFlag
    /// Requests handed over by `deferred` that the thread has not taken in yet.
    private let backlogCount = Atomic<Int>(0)

    private var endpoints: [Endpoint]
    private var settings: Settings
    private var http: LaneHTTP
    private var grouper: LaneGrouper
    /// The requests waiting for their group to be sent; each one's size is the grouper's.
    private var waiting: [String: LaneMember] = [:]
    /// The shared part of the batch files' lines that wait, by batch name: one for all of
    /// a batch's lines. Emptied when nothing waits (the groups' lines keep theirs).
    private var lineBatches: [String: LaneLineBatch] = [:]
    /// Members to return to the live lane whose line could not be read back yet.
    private var returning: [LaneMember] = []
    /// Lines of a group lost to another daemon to hand back to their batch, whose line could
    /// not be read back yet.
    private var handingBack: [LaneMember] = []
    /// Lines of a batch file taken over from a dead daemon whose remote batch is about to be
    /// adopted here (`RemoteGroupClaims.line`), with the endpoint they were handed over for:
    /// joined again after each look at `state/remote`.
    private var heldAside: [String: (member: LaneMember, endpoint: String?)] = [:]
    var groups: [String: LaneGroup] = [:]
    private var groupOfMember: [String: String] = [:]

    /// `leases`: the claims of a spool several daemons share (nil when this daemon has it
    /// alone); each group is then followed under a claim of its own (`RemoteGroupClaims`).
    /// `runsBatch`: whether this daemon's batch runner runs a batch file now (a group that
    /// carries lines of a batch is adopted only by the daemon that runs it).
    public init(layout: SpoolLayout, endpoints: [Endpoint], settings: Settings, finisher: Finisher, logger: Logger, leases: LeaseManager? = nil,
                runsBatch: @escaping @Sendable (String) -> Bool = { _ in false },
                post: @escaping @Sendable (Scheduler.Event) -> Void) {
        self.layout = layout
        self.store = RemoteIntentStore(layout: layout)
        self.registry = RemoteGroupRegistry(store: store, leases: leases, logger: logger, runsBatch: runsBatch)
        self.sharedSpool = leases != nil
        self.leases = leases
        self.finisher = finisher
        self.post = post
        self.logger = logger
        self.endpoints = endpoints
        self.settings = settings
        let stop = LaneStopFlag()
        self.stop = stop
        self.http = LaneHTTP(settings: settings.http, stop: stop)
        self.grouper = LaneGrouper(limits: settings.limits)
    }

    /// Every remote batch this daemon is carrying, for `status`.
    public var progress: [Progress] { progressBox.withLock { $0 } }

    /// Reads the intent records of earlier runs and starts the thread. Called before the
    /// watcher starts, so that a member found again joins its group instead of a new one.
    public func start() {
        recover()
        running.store(true, ordering: .relaxed)
        NamedThread.start("lane") { [self] in run() }
    }

    /// A request that may wait, from the scheduler (any thread); with no endpoint, a member
    /// of a resumed remote batch found again.
    public func deferred(_ task: TaskDescriptor, endpoint: String?) {
        backlogCount.add(1, ordering: .relaxed)
        enqueue(.deferred(task, endpoint: endpoint))
    }

    /// Requests handed over that the lane's thread has not taken in yet: a batch file's
    /// feed waits while there are many (`BatchLineFeed.laneBacklogLimit`).
    public var backlog: Int { backlogCount.load(ordering: .relaxed) }

    /// A laned request's file left `outgoing` (any thread).
    public func withdrawn(id: String) {
        enqueue(.withdrawn(id))
    }

    public func reconfigure(endpoints: [Endpoint], settings: Settings) {
        enqueue(.reconfigure(endpoints, settings))
    }

    /// A request this daemon has just claimed (any thread; `tookOver`: from a daemon that is
    /// gone), judged against the recorded groups: a group whose follower is gone is adopted
    /// first, its members made known to the scheduler before the verdict is returned.
    public func memberClaimed(_ id: String, tookOver: Bool) -> RemoteGroupClaims.Member {
        // Through the inbox: the member's hand-over, which follows the verdict, queues behind it.
        registry.judge(id, tookOver: tookOver) { deliver($0, onLaneThread: false) }
    }

    /// Adopts every group whose follower is gone (any thread): before a batch taken over from
    /// a dead daemon feeds its lines again, so that a line of an adopted group goes back to it.
    public func adoptUnfollowed() {
        deliver(registry.adoptUnfollowed(), onLaneThread: false)
    }

    /// Whether a group not followed here carries lines of the batch file `batch` (any
    /// thread): its runner then feeds each line not tried yet to the lane, whatever its
    /// route, to wait for that group (`RemoteGroupClaims.lineFed`). Never on a spool this
    /// daemon has alone.
    public func groupElsewhereCarriesLines(of batch: String) -> Bool {
        sharedSpool && registry.carriedElsewhere(batch: batch)
    }

    /// The claim of `group` is another daemon's now (from the lease keeper).
    public func groupLost(_ group: String) {
        enqueue(.lost(group))
    }

    /// The batch runner dropped the batch file `name`, whose claim another daemon took (any
    /// thread): called before its lines in flight are withdrawn, which the inbox then brings
    /// after it.
    public func batchLost(_ name: String) {
        enqueue(.batchLost(name))
    }

    /// Groups this daemon now follows: the lane's thread takes each one up before any member's
    /// hand-over (at once on its own thread, whose inbox it has not read yet; through the
    /// inbox from another), and the scheduler learns their members, so that each member found
    /// goes back to its batch.
    private func deliver(_ intents: [RemoteIntent], onLaneThread: Bool) {
        guard !intents.isEmpty else { return }
        for intent in intents {
            if onLaneThread { resume(intent) } else { enqueue(.adopted(intent)) }
        }
        post(.laneResumed(ids: intents.flatMap { $0.members.map(\.id) }))
    }

    /// Stops after the step under way; what waits in groups not yet sent stays in `outgoing`
    /// (no intent was recorded for it), and every recorded group resumes on the next start.
    public func finish() {
        guard running.load(ordering: .relaxed) else { return }
        stop.set()
        enqueue(.stop)
        stopped.wait()
    }

    private func enqueue(_ message: Message) {
        inbox.withLock { $0.append(message) }
        wake.signal()
    }

    // MARK: the thread

    private func run() {
        var messages: [Message] = []
        var nextLook = Date().timeIntervalSince1970 + registry.lookAgainSeconds
        loop: while true {
            inbox.withLock { swap(&messages, &$0) }
            for message in messages {
                if case .stop = message { break loop }
                handle(message)
            }
            messages.removeAll(keepingCapacity: true)
            if waiting.isEmpty && !lineBatches.isEmpty { lineBatches = [:] }
            if !returning.isEmpty {
                let members = returning
                returning = []
                for member in members { returnLive(member) }
            }
            if !handingBack.isEmpty {
                let members = handingBack
                handingBack = []
                for member in members { handBackToBatch(member) }
            }
            let now = Date().timeIntervalSince1970
            if sharedSpool && now >= nextLook {
                // A daemon that died following a group leaves it to be adopted, even when
                // none of its members is taken over here (all published, or all deleted).
                deliver(registry.adoptUnfollowed(), onLaneThread: true)
                nextLook = now + registry.lookAgainSeconds
                joinHeldAside()
            }
            if let deadline = grouper.nextDeadline, deadline <= now { apply(grouper.handle(.tick(now: now))) }
            for id in groups.keys.sorted() {
                guard let group = groups[id], let step = group.next, group.due <= now else { continue }
                groups[id]?.next = nil
                guard let actions = groups[id]?.machine.handle(.due(step, now: now)) else { continue }
                drive(id, actions)
            }
            publishProgress()
            var wait = 1.0
            if sharedSpool { wait = min(wait, nextLook - now) }
            if let deadline = grouper.nextDeadline { wait = min(wait, deadline - now) }
            for group in groups.values where group.next != nil { wait = min(wait, group.due - now) }
            _ = wake.wait(timeout: .now() + max(0.005, wait))
        }
        stopped.signal()
    }

    private func handle(_ message: Message) {
        switch message {
        case .deferred(let task, let endpoint):
            join(task, endpoint: endpoint)
            backlogCount.subtract(1, ordering: .relaxed)
        case .withdrawn(let id):
            if waiting[id] != nil {
                apply(grouper.handle(.removed(id: id)))
            } else if groupOfMember[id] == nil {
                // Not the lane's (any more): the scheduler still holds it, and must let go.
                // One still to be returned live (or held aside) is not returned.
                returning.removeAll { $0.id == id }
                heldAside[id] = nil
                finisher.withdrawn(id: id)
                post(.finalized(id: id))
            }
            // A member of a sent group: its answer is discarded when it arrives (`publish`);
            // when no member is left, the remote batch is cancelled.
            if let group = groupOfMember[id] {
                // A batch's line ends at once, cancelled, so that its batch can end.
                if BatchLineRef(id: id) != nil { lineWithdrawn(id, group: group) } else { memberDeleted(id, group: group) }
            }
        case .reconfigure(let newEndpoints, let newSettings):
            // A group whose endpoint was missing waits a minute between tries: one that is
            // back goes on at once.
            let now = Date().timeIntervalSince1970
            for (id, group) in groups where group.next != nil && !endpoints.contains(where: { $0.name == group.machine.intent.endpoint })
                && newEndpoints.contains(where: { $0.name == group.machine.intent.endpoint }) {
                groups[id]?.due = now
            }
            endpoints = newEndpoints
            settings = newSettings
            http = LaneHTTP(settings: newSettings.http, stop: stop)
            // A reload that stops an endpoint batching (or removes it): what waits for a group
            // there goes live, and so does a group recorded with nothing remote yet. A group
            // that may exist remotely is followed to its end (`perform`).
            let batching = Set(newEndpoints.filter(\.batch).map(\.name))
            apply(grouper.handle(.batching(endpoints: batching)))
            for (id, group) in groups.sorted(by: { $0.key < $1.key })
            where group.machine.intent.state == .intent && !batching.contains(group.machine.intent.endpoint) {
                abandon(id, "its endpoint \(group.machine.intent.endpoint) no longer batches (configuration reloaded) and nothing remote exists yet")
            }
        case .adopted(let intent):
            resume(intent)
        case .lost(let id):
            letGroupGo(id, "the claim of a remote batch's group was taken by another daemon; it follows the batch now")
        case .batchLost(let name):
            batchLost(name, groupIDs: groups.keys.sorted())
        case .stop:
            break
        }
    }

    /// Stops following the group `id`, which another daemon follows (or is to adopt) from its
    /// record: nothing of the record is touched here, its claim is given up, and each member
    /// held here goes back (a request's claim let go, a line to its batch).
    private func letGroupGo(_ id: String, _ reason: String) {
        guard let group = groups.removeValue(forKey: id) else { return }
        logger.warning(reason, ["group": LogValue(id), "batch": LogValue(group.machine.intent.batchID ?? "unknown")])
        // Known as the new follower's group before any member is let go: one claimed here
        // again is then let go too, not sent a second time.
        registry.lost(group: id, members: group.machine.intent.members.map(\.id))
        for member in group.machine.intent.members where groupOfMember[member.id] == id {
            groupOfMember[member.id] = nil
            guard let held = group.held[member.id], !group.ended.contains(member.id) else { continue }
            // A line whose batch no longer runs here lost its batch's claim with the group's:
            // its runner has withdrawn it, or will, and that withdrawal ends it once. Handed
            // back as well, it would be reported ended twice (`BatchRunner.abandon`).
            if let line = BatchLineRef(id: member.id), !registry.runs(batch: line.batch) { continue }
            post(.laneEnded(id: member.id))
            switch RemoteGroupClaims.afterLoss(isLine: BatchLineRef(id: member.id) != nil) {
            case .letClaimGo:
                // Left expired, as a member of a live daemon's group is (`LeaseClaimer`):
                // should the new follower die before it claims it, the next claim is a
                // takeover, which looks at `state/remote` again.
                leases?.letGo(member.id)
                post(.finalized(id: member.id))
            case .backToBatch:
                handBackToBatch(held)
            }
        }
    }

    private func memberDeleted(_ id: String, group groupID: String) {
        guard groups[groupID] != nil else { return }
        groups[groupID]?.deleted.insert(id)
        logger.debug("a member of a sent group was deleted", id: id, ["group": LogValue(groupID)])
        cancelIfUnwanted(groupID)
    }

    /// When no member of a sent group is wanted any more, its remote batch is cancelled.
    func cancelIfUnwanted(_ groupID: String) {
        guard let group = groups[groupID] else { return }
        let members = group.machine.intent.members
        // The counts first: a group of 50,000 lines is not walked at each deletion.
        guard !group.machine.isWithdrawn, group.deleted.count + group.ended.count >= members.count,
              members.allSatisfy({ group.deleted.contains($0.id) || group.ended.contains($0.id) }) else { return }
        logger.info("every request of a sent group was deleted", ["group": LogValue(groupID), "batch": LogValue(group.machine.intent.batchID ?? "not known yet")])
        guard let actions = groups[groupID]?.machine.handle(.withdrawn), !actions.isEmpty else { return }
        // The step that was due (a poll) gives way to what the withdrawal asks for.
        groups[groupID]?.next = nil
        drive(groupID, actions)
    }

    /// A deferrable request joins its recovered group (the same file, found again after a
    /// restart) or a group being formed.
    private func join(_ task: TaskDescriptor, endpoint: String?) {
        if let id = groupOfMember[task.id], let member = groups[id]?.machine.intent.members.first(where: { $0.id == task.id }),
           LaneMembership.isSameRequest(recorded: member.request, found: task.identity) {
            groups[id]?.held[task.id] = memberForm(of: task)
            logger.debug("found again for its remote batch", id: task.id, ["group": LogValue(id)])
            return
        }
        // A new file under a member's name: the group's answer is not for it, and its claim
        // must not send it back here.
        if let id = groupOfMember[task.id] { registry.notMember(task.id, of: id) }
        if sharedSpool, task.line != nil, registry.lineWaits(task.id) {
            if heldAside[task.id] == nil {
                logger.debug("held aside until the remote batch of a dead daemon that carries lines of its batch is adopted", id: task.id)
            }
            heldAside[task.id] = (memberForm(of: task), endpoint)
            return
        }
        guard let endpoint else {
            // Sent to its resumed batch although the config no longer batches it, but the
            // file is not the one in the batch (replaced meanwhile), or the batch has ended:
            // it is a new request.
            logger.info("the request is not one a remote batch here still waits for; it goes live", id: task.id)
            post(.laneReturned(task))
            return
        }
        guard waiting[task.id] == nil else { return }
        let size: Int
        do {
            guard let body = try LaneUploadSource.readBody(path: task.requestPath, range: task.summary.body, identity: task.identity) else {
                throw LaneHTTP.BodyFailure(description: "the file changed after intake")
            }
            size = LaneUploadSource.line(id: task.id, url: url(of: task), body: body).count
        } catch {
            logger.warning("cannot measure the request for the background lane; it goes live", id: task.id, ["reason": "\(error)"])
            post(.laneReturned(task))
            return
        }
        waiting[task.id] = memberForm(of: task)
        logger.debug("deferred to the background lane", id: task.id, ["endpoint": LogValue(endpoint)])
        apply(grouper.handle(.added(LaneGrouper.Member(id: task.id, bytes: size), LaneGrouper.Key(endpoint: endpoint, url: url(of: task), batch: task.line == nil ? nil : BatchLineRef(id: task.id)?.batch),
                                    at: Date().timeIntervalSince1970)))
    }

    /// Joins again the lines held aside, once `state/remote` was looked at: those of an adopted
    /// group find it, the others are grouped as usual unless a group not followed here still
    /// carries lines of their batch.
    private func joinHeldAside() {
        guard !heldAside.isEmpty else { return }
        let aside = heldAside
        heldAside = [:]
        for (id, entry) in aside.sorted(by: { $0.key < $1.key }) {
            switch readBack(entry.member) {
            case .task(let task)?:
                join(task, endpoint: entry.endpoint)
            case .changed(let problem)?:
                logger.warning("a line held aside is not in its batch any more; it is cancelled", id: id, ["problem": LogValue(problem)])
                finisher.withdrawn(id: id)
                post(.finalized(id: id))
            case nil:
                heldAside[id] = entry
            }
        }
    }

    /// How the lane keeps `task`: a batch's line by its offsets, against the one object its
    /// batch's waiting lines share.
    private func memberForm(of task: TaskDescriptor) -> LaneMember {
        guard task.line != nil, let line = BatchLineRef(id: task.id), let found = LaneLineBatch(name: line.batch, task: task) else {
            return .task(task)
        }
        if let known = lineBatches[line.batch], known == found { return LaneMember.holding(task, batch: known) }
        lineBatches[line.batch] = found
        return LaneMember.holding(task, batch: found)
    }

    /// Hands a member back to the live lane, its task read back first when it is a line:
    /// a line whose batch's input changed is not wanted any more (its runner cancels the
    /// batch), and one that cannot be read now is tried again on the next turn.
    func returnLive(_ member: LaneMember) {
        switch readBack(member) {
        case .task(let task):
            post(.laneReturned(task))
        case .changed(let problem):
            logger.warning("a line to be sent live is not in its batch any more; it is cancelled", id: member.id, ["problem": LogValue(problem)])
            finisher.withdrawn(id: member.id)
            post(.finalized(id: member.id))
        case nil:
            returning.append(member)
        }
    }

    /// The groups among `groupIDs` that carry lines of the batch `name`, whose claim was lost:
    /// each is let go for the batch's next runner, or its lines end as they are withdrawn
    /// (`RemoteGroupClaims.afterBatchLost`).
    private func batchLost(_ name: String, groupIDs: [String]) {
        var lookup = LaneLineLookup()
        for id in groupIDs {
            guard let members = groups[id]?.machine.intent.members else { continue }
            var recorded: FileIdentity??
            // Another batch's lines count only when no daemon runs that batch (its input is
            // gone), as the adopter judges (`RemoteGroupClaims.runsLines`): a group let go that
            // carries lines of a batch run anywhere could be adopted by no daemon.
            var otherBatches: [String: Bool] = [:]
            let onlyLinesOfBatchesNotRunHere = members.allSatisfy { member in
                guard let line = BatchLineRef(id: member.id) else { return false }
                if line.batch == name {
                    if recorded == nil { recorded = .some(member.request) }
                    return true
                }
                if let gone = otherBatches[line.batch] { return gone }
                var gone = false
                if !registry.runs(batch: line.batch) {
                    do {
                        gone = try !Syscall.exists(layout.batchRequest(line.batch))
                    } catch {
                        logger.warning("cannot look at a batch's input; its group is not let go", id: line.batch, ["reason": "\(error)"])
                    }
                }
                otherBatches[line.batch] = gone
                return gone
            }
            guard let recorded else { continue }
            let input: LaneLineFate.Input
            if let known = lookup.inputs[name], known.recorded == recorded {
                input = known.input
            } else {
                input = lineInput(BatchLineRef(batch: name, entry: 0), recorded: recorded)
                lookup.inputs[name] = (recorded, input)
            }
            switch RemoteGroupClaims.afterBatchLost(onlyLinesOfBatchesNotRunHere: onlyLinesOfBatchesNotRunHere, input: input) {
            case .letGroupGo:
                guard let group = groups.removeValue(forKey: id) else { continue }
                logger.warning("the batch of a sent group's lines runs on another daemon now; the group is left for its runner to adopt",
                               id: name, ["group": LogValue(id), "batch": LogValue(group.machine.intent.batchID ?? "unknown")])
                registry.lost(group: id, members: members.map(\.id))
                // Each line held here is withdrawn by its runner next (`BatchRunner.abandon`):
                // found in no group, it ends then, once (the finisher, then the scheduler).
                for member in members where groupOfMember[member.id] == id { groupOfMember[member.id] = nil }
            case .endItsLines:
                logger.info("a sent group carries lines of a batch whose claim was lost; they end as they are withdrawn",
                            id: name, ["group": LogValue(id)])
            }
        }
    }

    /// Hands a line of a group lost to another daemon back to its batch (`.laneEnded` was
    /// posted): read back first; a line whose batch's input changed is not wanted any more,
    /// and one that cannot be read now is tried again on the next turn.
    private func handBackToBatch(_ member: LaneMember) {
        switch readBack(member) {
        case .task(let task)?:
            if let event = finisher.lineHandedBack(task) { post(event) }
        case .changed(let problem)?:
            logger.warning("a line of a lost group is not in its batch any more; it is cancelled", id: member.id, ["problem": LogValue(problem)])
            finisher.withdrawn(id: member.id)
            post(.finalized(id: member.id))
        case nil:
            handingBack.append(member)
        }
    }

    /// A member's task: its own, or its line's read back from its batch's input; nil when
    /// the input cannot be read now (the failure is logged).
    func readBack(_ member: LaneMember) -> LaneLine.ReadBack? {
        switch member {
        case .task(let task):
            return .task(task)
        case .line(let line):
            do {
                guard let bytes = try LaneUploadSource.readBody(path: line.batch.inputPath, range: line.line, identity: line.batch.identity) else {
                    return .changed("\(line.batch.inputPath) is not the file the line was read from")
                }
                return line.task(from: bytes)
            } catch {
                logger.warning("cannot read a line back from its batch's input; will try again", id: line.id,
                               ["path": LogValue(line.batch.inputPath), "reason": "\(error)"])
                return nil
            }
        }
    }

    private func url(of task: TaskDescriptor) -> String {
        DialectRegistry.dialect(for: task.summary).url
    }

    private func apply(_ actions: [LaneGrouper.Action]) {
        for action in actions {
            switch action {
            case .send(let key, let members, let reason):
                var held: [String: LaneMember] = [:]
                if members.count == waiting.count, members.allSatisfy({ waiting[$0.id] != nil }) {
                    // Everything waiting goes: the table itself becomes the group's, not a copy.
                    swap(&held, &waiting)
                } else {
                    held.reserveCapacity(members.count)
                    for member in members {
                        if let found = waiting.removeValue(forKey: member.id) { held[member.id] = found }
                    }
                    // A dictionary keeps its capacity when emptied: 50,000 members' worth, held for nothing.
                    if waiting.isEmpty { waiting = [:] }
                }
                form(key, members.filter { held[$0.id] != nil }, held: held, reason: reason)
            case .tooLarge(let member, let key):
                guard let found = waiting.removeValue(forKey: member.id) else { continue }
                logger.warning("the request alone passes batch_max_bytes; it goes live", id: member.id,
                               ["bytes": "\(member.bytes)", "endpoint": LogValue(key.endpoint)])
                returnLive(found)
            case .removed(let id, _):
                let member = waiting.removeValue(forKey: id)
                finisher.withdrawn(id: id, identity: member?.identity)
                post(.finalized(id: id))
            case .unbatched(let member, let key):
                guard let found = waiting.removeValue(forKey: member.id) else { continue }
                logger.info("the endpoint no longer batches; the request goes live", id: member.id, ["endpoint": LogValue(key.endpoint)])
                returnLive(found)
            }
        }
    }

    /// A group is sent: its intent is recorded durably, then its life begins.
    /// `members` in the grouper's order, each with its input line's size; `held` holds each one.
    private func form(_ key: LaneGrouper.Key, _ members: [LaneGrouper.Member], held: [String: LaneMember], reason: LaneGrouper.Reason) {
        guard !members.isEmpty else { return }
        let groupID = LaneMembership.newGroupID()
        let now = Date()
        let api = endpoints.first { $0.name == key.endpoint }?.api ?? .openai
        let intent = RemoteIntent(group: groupID, endpoint: key.endpoint, api: api, url: key.url, createdAt: Int(now.timeIntervalSince1970),
                                  members: members.map { RemoteIntent.Member(id: $0.id, request: held[$0.id]?.identity) })
        // Claimed before the record exists: no other daemon ever finds it unfollowed.
        guard registry.claimNew(group: groupID, members: members.map(\.id)) else {
            logger.error("cannot claim a new group; its requests go live", ["group": LogValue(groupID)])
            for member in members { if let found = held[member.id] { returnLive(found) } }
            return
        }
        do {
            try store.write(intent)
        } catch {
            logger.error("cannot record a group's intent; its requests go live", ["group": LogValue(groupID), "reason": "\(error)"])
            registry.forget(group: groupID, ended: true)
            for member in members { if let found = held[member.id] { returnLive(found) } }
            return
        }
        var group = LaneGroup(machine: machine(for: intent),
                              startedAt: now)
        group.held = held
        group.sizes.reserveCapacity(members.count)
        groupOfMember.reserveCapacity(groupOfMember.count + members.count)
        for member in members {
            group.sizes[member.id] = member.bytes
            groupOfMember[member.id] = groupID
        }
        groups[groupID] = group
        logger.info("group recorded", ["group": LogValue(groupID), "endpoint": LogValue(key.endpoint), "url": LogValue(key.url),
                                       "requests": "\(members.count)", "reason": LogValue(reason.rawValue),
                                       "lines_by_offsets": "\(held.values.lazy.filter { if case .line = $0 { true } else { false } }.count)"])
        LaneTestPause.at("intent", group: groupID, logger: logger)
        guard let actions = groups[groupID]?.machine.handle(.start) else { return }
        drive(groupID, actions)
    }

    /// Every record of an earlier run, and on a shared spool every group whose follower is
    /// gone (`RemoteGroupRegistry`): a group recorded only as an intent had nothing remote
    /// (its file id is recorded before any create), so its record goes and its members are
    /// grouped again as they are found; every later state resumes. A group a live daemon
    /// follows is left to it.
    private func recover() {
        deliver(registry.adoptUnfollowed(), onLaneThread: true)
    }

    private func machine(for intent: RemoteIntent) -> RemoteBatchMachine {
        RemoteBatchMachine(intent: intent, schedule: PollSchedule(initial: settings.pollSeconds, maximum: settings.pollMaxSeconds,
                                                                  maximumRetryAfter: settings.maxRetryAfterSeconds),
                           deadlineSeconds: settings.deadlineSeconds)
    }

    /// Takes up a group this daemon now follows, where its record stands.
    private func resume(_ intent: RemoteIntent) {
        guard groups[intent.group] == nil else { return }
        var group = LaneGroup(machine: machine(for: intent),
                              startedAt: Date(timeIntervalSince1970: Double(intent.createdAt)))
        for member in intent.members { groupOfMember[member.id] = intent.group }
        if case .perform(let step)? = group.machine.handle(.start).first { group.next = step }
        if intent.state < .ended, intent.members.allSatisfy({ !isPresent($0) }) {
            // Every member was deleted while no daemon followed the group.
            group.deleted = Set(intent.members.map(\.id))
            if case .perform(let step)? = group.machine.handle(.withdrawn).first { group.next = step }
        }
        groups[intent.group] = group
        logger.info("resuming a remote batch", ["group": LogValue(intent.group), "state": LogValue(intent.state.rawValue),
                                                "batch": LogValue(intent.batchID ?? "unknown"), "requests": "\(intent.members.count)"])
    }

    /// Whether a member's request is still the file recorded in its group; true when it
    /// cannot be told (a member is never given up on a failed look).
    private func isPresent(_ member: RemoteIntent.Member) -> Bool {
        if let line = BatchLineRef(id: member.id) { return lineInput(line, recorded: member.request) != .changed }
        do {
            guard let found = try SpoolFiles(layout: layout).identity(of: layout.request(member.id)) else { return false }
            return LaneMembership.isSameRequest(recorded: member.request, found: found)
        } catch {
            logger.warning("cannot look at a member's request", id: member.id, ["reason": "\(error)"])
            return true
        }
    }

    // MARK: a group's life

    /// Performs the machine's actions in order, feeding each step's answer back, until the
    /// group waits, ends, or a step cannot be taken now.
    private func drive(_ id: String, _ actions: [RemoteBatchMachine.Action]) {
        var pending = actions[...]
        while let action = pending.popFirst() {
            guard groups[id] != nil, !stop.isSet else { return }
            switch action {
            case .record(let intent):
                guard record(id, intent) else {
                    // The step after depends on this record: it waits until the record is written.
                    if let step = Self.step(of: pending.first) { retry(id, step, after: 5) }
                    return
                }
            case .perform(let step):
                if let unrecorded = groups[id]?.unrecorded, !record(id, unrecorded) {
                    retry(id, step, after: 5)
                    return
                }
                guard mayTake(step, id) else { return }
                // Every step's answer passes here, on its way to the log, the machine and
                // the record: a provider that echoes the key it was sent is blanked out once.
                guard let event = perform(step, id).map(finisher.secretRedaction.redact) else { return }
                guard let next = groups[id]?.machine.handle(event) else { return }
                switch event {
                case .failed(_, _, let message), .gone(let message):
                    logger.warning("a remote batch step failed", ["group": LogValue(id), "step": LogValue(step.name), "reason": LogValue(message)])
                default: break
                }
                pending.append(contentsOf: next)
            case .wait(let seconds, let step):
                retry(id, step, after: seconds)
            case .finish:
                end(id)
            case .abandon(let message):
                abandon(id, message)
            case .warn(let message):
                logger.warning("a remote batch needs attention", ["group": LogValue(id), "reason": LogValue(message)])
            }
        }
    }

    /// Whether the group's claim lets `step` be taken now (`RemoteGroupClaims.stepGate`):
    /// when it does not, the step waits for the keeper, or the group is dropped as lost.
    private func mayTake(_ step: RemoteBatchMachine.Step, _ id: String) -> Bool {
        guard let leases else { return true }
        let claimID = RemoteGroupClaims.claimID(group: id)
        switch RemoteGroupClaims.stepGate(step, shared: true, held: leases.holds(claimID), leaseFilesOnly: leases.claimsBoundByTime,
                                          leaseExpiresAt: leases.writtenExpiry(claimID), now: Date().timeIntervalSince1970) {
        case .go:
            return true
        case .wait(let seconds):
            logger.debug("the group's claim is past its lease time here; its step waits for its renewal",
                         ["group": LogValue(id), "step": LogValue(step.name)])
            retry(id, step, after: seconds)
            return false
        case .lost:
            handle(.lost(id))
            return false
        }
    }

    private static func step(of action: RemoteBatchMachine.Action?) -> RemoteBatchMachine.Step? {
        switch action {
        case .perform(let step)?, .wait(_, let step)?: step
        default: nil
        }
    }

    private func retry(_ id: String, _ step: RemoteBatchMachine.Step, after seconds: Double) {
        groups[id]?.next = step
        groups[id]?.due = Date().timeIntervalSince1970 + seconds
    }

    private func record(_ id: String, _ intent: RemoteIntent) -> Bool {
        do {
            try store.write(intent)
            groups[id]?.unrecorded = nil
            return true
        } catch {
            groups[id]?.unrecorded = intent
            logger.error("cannot record a remote batch's state; its next step waits", ["group": LogValue(id), "reason": "\(error)"])
            return false
        }
    }

    /// One step's I/O; the event it amounts to, or nil when the step rescheduled itself.
    private func perform(_ step: RemoteBatchMachine.Step, _ id: String) -> RemoteBatchMachine.Event? {
        guard let group = groups[id] else { return nil }
        let intent = group.machine.intent
        // A batch already created is followed to its end on its endpoint even when the
        // config no longer batches there: `"batch": false` stops new groups, and sending the
        // members live instead would pay for them twice.
        guard let endpoint = endpoints.first(where: { $0.name == intent.endpoint }) else {
            logger.error("the endpoint of a remote batch is not in the config; the batch and its requests wait until it is again",
                         ["group": LogValue(id), "endpoint": LogValue(intent.endpoint)])
            retry(id, step, after: 60)
            return nil
        }
        if step == .create && !endpoint.batch {
            // Recorded before a restart (uploaded, or creating) with the endpoint no longer
            // batching, and the provider's list shows no batch of the group: none is made now.
            abandon(id, "its endpoint \(endpoint.name) no longer batches, and no batch of the group was found")
            return nil
        }
        let anthropic = AnthropicBatchClient(endpoint: endpoint, http: http)
        if intent.api == .anthropic,
           let event = MessageBatchSteps(client: anthropic, http: http, layout: layout, logger: logger)
            .perform(step, group: group, output: outputPath(id), errors: errorsPath(id)) {
            return event
        }
        let client = OpenAIBatchClient(endpoint: endpoint, http: http)
        // The steps both flows share (poll, cancel, split, publish) and OpenAI's own.
        let batchClient: any RemoteBatchClient = intent.api == .anthropic ? anthropic : client
        switch step {
        case .upload:
            var linesBytes = 0
            for member in intent.members {
                guard group.held[member.id] != nil, let size = group.sizes[member.id] else {
                    return .failed(retryable: false, retryAfter: nil, message: "the request \(member.id) is not at hand for the upload")
                }
                let (sum, overflow) = linesBytes.addingReportingOverflow(size)
                guard !overflow else { return .failed(retryable: false, retryAfter: nil, message: "the group's input is too large to describe") }
                linesBytes = sum
            }
            // The lines are read from the group's own tables as the upload reaches them (the
            // lane's thread does nothing else meanwhile, so they are shared, not copied).
            let members = intent.members, held = group.held, sizes = group.sizes
            guard let source = LaneUploadSource(group: id, url: intent.url, count: members.count, linesBytes: linesBytes, line: { index in
                let member = members[index]
                guard let found = held[member.id], let size = sizes[member.id] else { return nil }
                return LaneUploadSource.Line(id: member.id, path: found.path, body: found.body, identity: found.identity, size: size)
            }) else {
                return .failed(retryable: false, retryAfter: nil, message: "the group's input is too large to describe")
            }
            if LaneTestPause.isSet("uploading") { source.afterFirstLine = { [logger] in LaneTestPause.at("uploading", group: id, logger: logger) } }
            let event = client.upload(group: id, source: source)
            if case .uploaded(let file) = event { logger.info("input uploaded", ["group": LogValue(id), "file": LogValue(file), "bytes": "\(source.size)"]) }
            return event
        case .create:
            guard let file = intent.inputFileID else { return .failed(retryable: false, retryAfter: nil, message: "no input file id is recorded") }
            let event = client.create(inputFileID: file, url: intent.url, group: id)
            if case .created(let batch) = event {
                logger.info("remote batch created", ["group": LogValue(id), "batch": LogValue(batch)])
                LaneTestPause.at("created", group: id, logger: logger)
            } else if event == .createUncertain {
                logger.warning("the create's outcome is unknown; the provider's list is read before any other create", ["group": LogValue(id)])
            }
            return event
        case .list(let after):
            let event = client.list(after: after)
            if case .listed(let page) = event, let mine = page.entries.first(where: { $0.group == id }) {
                logger.info("remote batch found by its group id", ["group": LogValue(id), "batch": LogValue(mine.id)])
            }
            return event
        case .poll:
            return poll(id, client: batchClient)
        case .download(let output, let errors):
            for (fileID, path) in [(output, outputPath(id)), (errors, errorsPath(id))] {
                guard let fileID else {
                    logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) }
                    continue
                }
                if let failure = http.downloadDurably(to: path, mode: layout.fileMode, group: id, members: intent.members.count, logger: logger, { fd in
                    client.download(fileID: fileID, to: fd, path: path)
                }) { return failure }
            }
            logger.info("remote batch downloaded", ["group": LogValue(id), "batch": LogValue(intent.batchID ?? "?")])
            return .downloaded
        case .inspect:
            return .failed(retryable: false, retryAfter: nil, message: "an OpenAI batch carries its group in its metadata: nothing to inspect")
        case .split:
            do {
                try index(id)
            } catch {
                return .failed(retryable: true, retryAfter: nil, message: "reading the downloaded output failed: \(error)")
            }
            return .split
        case .cancel:
            return cancel(id, client: batchClient)
        case .publish:
            if groups[id]?.index == nil {
                do {
                    try index(id)
                } catch {
                    return .failed(retryable: true, retryAfter: nil, message: "reading the downloaded output failed: \(error)")
                }
            }
            guard publish(id, endpoint: endpoint) else {
                // Members found again after a restart arrive as the watcher sees them.
                retry(id, .publish, after: 1)
                return nil
            }
            return .published
        }
    }

    private func outputPath(_ id: String) -> String { layout.remote + "/" + id + ".output.jsonl" }
    private func errorsPath(_ id: String) -> String { layout.remote + "/" + id + ".errors.jsonl" }

    private func index(_ id: String) throws {
        let paths = [outputPath(id), errorsPath(id)].filter { Syscall.isPresent($0) }
        guard let intent = groups[id]?.machine.intent else { return }
        let index = try LaneOutputIndex(paths: paths, members: Set(intent.members.map(\.id)), reader: LaneOutputIndex.reader(for: intent))
        for problem in index.problems {
            logger.warning("a line of a remote batch's output cannot be read", ["group": LogValue(id), "problem": LogValue(problem)])
        }
        if index.unreadable > index.problems.count {
            logger.warning("more lines of a remote batch's output cannot be read; they are not listed",
                           ["group": LogValue(id), "lines": "\(index.unreadable)", "listed": "\(index.problems.count)"])
        }
        if let first = index.firstStranger {
            logger.warning("lines of a remote batch's output name no request of its group; they are ignored",
                           ["group": LogValue(id), "lines": "\(index.strangers)", "first": LogValue(first)])
        }
        if index.repeats > 0 {
            logger.warning("requests have more than one line in a remote batch's output; the first of each counts",
                           ["group": LogValue(id), "lines": "\(index.repeats)"])
        }
        groups[id]?.index = index
    }

    /// Hands every member's outcome to the finisher once; true when none is left.
    private func publish(_ id: String, endpoint: Endpoint) -> Bool {
        guard let group = groups[id] else { return true }
        let intent = group.machine.intent
        let files = SpoolFiles(layout: layout)
        let endpointIndex = endpoints.firstIndex(of: endpoint) ?? 0
        var prepared: [Finisher.PreparedSuccess] = []
        var done = true
        var lines = LaneLineLookup()
        var pausedAtSplit = false
        for member in intent.members where groups[id]?.ended.contains(member.id) == false {
            if BatchLineRef(id: member.id) != nil {
                guard lineReady(member, group: id, lookup: &lines) else {
                    if groups[id]?.ended.contains(member.id) == false { done = false }
                    continue
                }
            } else {
                let path = layout.request(member.id)
                let current: FileIdentity?
                do {
                    current = try files.identity(of: path)
                } catch {
                    logger.warning("cannot look at a member's request; will look again", id: member.id, ["reason": "\(error)"])
                    done = false
                    continue
                }
                guard let current, LaneMembership.isSameRequest(recorded: member.request, found: current) else {
                    // Published before a restart, or deleted (or replaced) by its producer: the
                    // group's answer is not for the file there now.
                    groups[id]?.ended.insert(member.id)
                    if let held = group.held[member.id] {
                        post(.laneEnded(id: member.id))
                        finisher.withdrawn(id: member.id, identity: held.identity)
                        post(.finalized(id: member.id))
                    }
                    continue
                }
                guard group.held[member.id] != nil else {
                    // Its outcome was handed over before a restart when its record names this
                    // batch (a failed line now retried live); else the scheduler hands it over
                    // when the watcher finds it.
                    if let batch = intent.batchID, let record = TaskRecord.load(layout, id: member.id),
                       LaneMembership.isSameRequest(recorded: member.request, found: record.request),
                       record.history.attempts.contains(where: { $0.remoteBatch == batch }) {
                        groups[id]?.ended.insert(member.id)
                    } else {
                        done = false
                    }
                    continue
                }
            }
            guard let found = group.held[member.id] else { continue }
            let task: TaskDescriptor
            switch readBack(found) {
            case .task(let read)?:
                task = read
            case .changed(let problem)?:
                // Its batch's input is not the one it was read from: nobody wants its answer.
                logger.warning("a line of a remote batch is not in its batch any more; its answer is discarded", id: member.id,
                               ["problem": LogValue(problem)])
                groups[id]?.ended.insert(member.id)
                post(.laneEnded(id: member.id))
                finisher.withdrawn(id: member.id)
                post(.finalized(id: member.id))
                continue
            case nil:
                done = false
                continue
            }
            groups[id]?.ended.insert(member.id)
            post(.laneEnded(id: member.id))
            switch finisher.prepare(outcome(of: task, group: group, endpoint: endpoint, endpointIndex: endpointIndex)) {
            case .ended(let event):
                post(event)
                // A batch's line: its outcome goes to the batch's journal.
                if LaneTestPause.isSet("split") && !pausedAtSplit && BatchLineRef(id: member.id) != nil {
                    pausedAtSplit = true
                    LaneTestPause.at("split", group: id, logger: logger)
                }
            case .success(let success):
                prepared.append(success)
                if LaneTestPause.isSet("split") {
                    for event in finisher.commit(prepared) { post(event) }
                    prepared.removeAll(keepingCapacity: true)
                    LaneTestPause.at("split", group: id, logger: logger)
                }
                if prepared.count >= Self.commitBatch {
                    for event in finisher.commit(prepared) { post(event) }
                    prepared.removeAll(keepingCapacity: true)
                }
            }
        }
        for event in finisher.commit(prepared) { post(event) }
        return done
    }

    /// A member's line as the outcome of an attempt: its body in the `.partial`, as a live
    /// answer's would be, judged and published by the finisher.
    private func outcome(of task: TaskDescriptor, group: LaneGroup, endpoint: Endpoint, endpointIndex: Int) -> AttemptOutcome {
        let batch = group.machine.intent.batchID ?? "?"
        var ending: AttemptEnding
        var body: [UInt8] = []
        var headers: [String: String] = [:]
        do {
            let line = try group.index?.result(of: task.id)
            switch LaneMemberVerdict.decide(line: line, batchStatus: group.machine.intent.remoteStatus, batch: batch) {
            case .response(let status, let requestID, let answer):
                ending = .response(status: status)
                body = answer
                if let requestID { headers["x-request-id"] = requestID }
            case .failed(let message):
                ending = .transportError(code: 0, message: message)
            case .expired(let message):
                ending = .expired(message)
            }
        } catch {
            ending = .transportError(code: 0, message: "the remote batch \(batch)'s line for this request cannot be read: \(error)")
        }
        var written: DescriptorOwner?
        if case .response = ending {
            let partial = layout.partial(task.id)
            do {
                // Readable too: the finisher judges the answer through this descriptor.
                let file = try FileDescriptor.open(partial, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: layout.fileMode)
                try file.writeAll(body)
                written = DescriptorOwner(file)
            } catch {
                ending = .diskError("writing \(partial) failed: \(error)")
            }
        }
        var outcome = AttemptOutcome(task: task, ending: ending, partial: written, headers: headers, bytesReceived: Int64(body.count),
                                     startedAt: group.startedAt, endedAt: Date(), endpointIndex: endpointIndex, endpointName: endpoint.name)
        outcome.remoteBatch = group.machine.intent.batchID
        return outcome
    }

    private func end(_ id: String) {
        guard let group = groups.removeValue(forKey: id) else { return }
        for member in group.machine.intent.members where groupOfMember[member.id] == id { groupOfMember[member.id] = nil }
        guard RemoteGroupClaims.mayRemoveRecord(stillMine: registry.stillMine(group: id)) else {
            // Its new follower works from the record and its downloads.
            logger.warning("the claim of a remote batch's group is another daemon's now; its record is left to it", ["group": LogValue(id)])
            registry.forget(group: id, ended: false)
            return
        }
        logger.bestEffort("removing a finished group's record") { try store.remove(group: id) }
        // A tombstone: no stale view of the record is taken for an unfollowed group.
        registry.forget(group: id, ended: true)
        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(outputPath(id)) }
        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(errorsPath(id)) }
        logger.info("remote batch published", ["group": LogValue(id), "batch": LogValue(group.machine.intent.batchID ?? "?"),
                                               "requests": "\(group.machine.intent.members.count)"])
    }

    /// The group cannot go through the Batch API: its members still waiting go live.
    private func abandon(_ id: String, _ message: String) {
        guard let group = groups[id] else { return }
        logger.warning("a group cannot go through the Batch API; its requests go live", ["group": LogValue(id), "reason": LogValue(message)])
        for member in group.machine.intent.members where !group.ended.contains(member.id) {
            guard let found = group.held[member.id] else { continue }
            if group.deleted.contains(member.id) {
                post(.laneEnded(id: member.id))
                finisher.withdrawn(id: member.id, identity: found.identity)
                post(.finalized(id: member.id))
            } else {
                returnLive(found)
            }
        }
        groups[id]?.ended = Set(group.machine.intent.members.map(\.id))
        end(id)
    }

    private func publishProgress() {
        let list = groups.values.sorted { $0.id < $1.id }.map { group in
            Progress(group: group.id, endpoint: group.machine.intent.endpoint, state: group.machine.intent.state.rawValue,
                     batchID: group.machine.intent.batchID, remoteStatus: group.machine.intent.remoteStatus,
                     members: group.machine.intent.members.count, total: group.lastPoll?.total, completed: group.lastPoll?.completed,
                     failed: group.lastPoll?.failed)
        }
        progressBox.withLock { $0 = list }
    }
}
