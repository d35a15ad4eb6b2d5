import CSystem
import Foundation
import Glibc
import Synchronization

/// Claims on requests for daemons sharing one spool (over NFS, SMB, GlusterFS or sshfs, as
/// Maildir does), built only on what such filesystems make atomic on the server: exclusive
/// create, and rename/unlink. Client caches may show stale files; none of these steps
/// trusts a cached read to allow anything, only to refuse.
///
/// - Claim: `O_CREAT|O_EXCL` of `state/leases/<id>.lease`, holding the owner and an expiry.
///   An EEXIST may be the server's answer to a create it already did for us (a
///   retransmission), so it is confirmed by reading the lease back.
/// - Renew: a keeper thread rewrites each held lease in place every third of the lease
///   time, after checking it is still ours; a lease found taken is reported lost. A lease
///   being released is never renewed (the two exclude each other per id). In place, not by
///   rename: renaming onto a file open on the same FUSE mount leaves a `.fuse_hidden` file.
/// - End: when a task ends, its lease becomes a tombstone (`ended`, expiring after the
///   lease time) in place, so the id is never free in between: a daemon whose cache still
///   shows the answered request hits `EEXIST` on its claim. Expired tombstones are removed
///   by their owner's keeper, and the rest at a clean stop.
/// - Take over: a lease past its expiry plus the margin may be broken by whoever wins the
///   `O_EXCL` create of `<id>.takeover`; the winner checks the lease is still the expired
///   one, removes it, claims it afresh and drops the takeover lock.
/// - Locks: where the filesystem serves `F_OFD_SETLK` locks to every client (see
///   `ClaimMethod`), each lease is also locked from before its content is written until it
///   is removed, tombstone included. A lease with content whose lock is free belongs to a
///   daemon that is gone: it is taken over at once, under that lock, never by its content
///   (a cached copy of an old lease can look expired while its new holder is at work).
/// - Publish: the finisher asks `stillMine` first; a daemon that lost its lease (paused,
///   partitioned) discards its attempt and touches nothing of the new owner's.
public final class LeaseManager: Sendable {
    /// The result of a claim.
    public enum Claim: Sendable, Equatable {
        case claimed
        case heldElsewhere
        case failed(String)
    }

    typealias Lease = LeaseRules.Lease

    /// The ids held, and the one the keeper is renewing (a release waits for it).
    private struct Held {
        var ids: Set<String> = []
        var renewing: String?
        /// Our tombstones, with when they were written.
        var tombstones: [String: Double] = [:]
        /// With locks: the locked descriptor of each claim and tombstone of ours.
        var fds: [String: DescriptorOwner] = [:]
        /// With locks: when another daemon's claim was last probed, per id.
        var probedAt: [String: Double] = [:]
        /// When each held lease expires as this daemon last wrote it, by its own clock.
        var expiries: [String: Double] = [:]
    }

    public let owner: String
    public let seconds: Double
    /// Clocks may differ this much between machines before a lease is trusted less.
    public var margin: Double { max(1, seconds / 3) }
    /// The coarsest mtime a file server keeps.
    static let timestampGrainSeconds = 1.0
    private let layout: SpoolLayout
    private let logger: Logger
    private let held = Mutex(Held())
    private let stopRequested = Atomic<Bool>(false)
    private let keeperStarted = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    private let skewWarned = Atomic<Bool>(false)
    public let hostID: String
    private let lockMode = Atomic<Bool>(false)
    /// Until when (a `Double`'s bits) locks alone do not keep this daemon's claims
    /// (`noteLeaseFilesOwner`).
    private let lockDistrustedUntil = Atomic<UInt64>(0)
    /// Where the last tombstone sweep stopped in the folder's listing.
    private let housekeepingCursor = Atomic<Int>(0)

    /// How claims are held, as chosen by `chooseMethod` (lease files until then).
    public var method: ClaimMethod { lockMode.load(ordering: .relaxed) ? .locks : .leaseFiles }

    /// How long a tombstone bars its id. With locks a tombstone is held locked, one
    /// descriptor each, so it lives only as long as stale caches need.
    var tombstoneSeconds: Double { lockMode.load(ordering: .relaxed) ? min(seconds, 2 * LeaseManager.staleCacheSeconds) : seconds }

    public init(layout: SpoolLayout, hostID: String, seconds: Double, logger: Logger) {
        self.hostID = hostID
        self.layout = layout
        self.seconds = seconds
        self.logger = logger
        owner = "\(hostID):\(getpid()):\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
    }

    static func now() -> Double { Date().timeIntervalSince1970 }

    /// The lease at `path`, or nil when there is none. A lease that cannot be read (its
    /// owner died between the exclusive create and the write) expires `seconds` after the
    /// file's mtime, so it is taken over like any other.
    func read(_ path: String) -> Lease? {
        guard let info = logger.bestEffortValue("looking at a lease", { try Syscall.lstat(path) }) else { return nil }
        // Twice: a lease rewritten in place can be caught half-written.
        for attempt in 0..<2 {
            if attempt > 0 { usleep(5_000) }
            if let bytes = logger.bestEffortValue("reading a lease", { try FileReader.prefix(path: path, limit: 4096) }), let object = JSONObject.parse(bytes),
               let owner = object["owner"] as? String, let expires = (object["expires_at"] as? NSNumber)?.doubleValue {
                // Every renewal rewrites the file, so no honest expiry lies further past its
                // mtime than a lease time (twice, for clocks): a wild number in a lease file
                // cannot bar its id for ever.
                let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
                let bounded = expires.isFinite ? min(expires, modified + 2 * seconds) : modified + seconds
                let lease = Lease(owner: owner, expiresAt: bounded, ended: (object["ended"] as? Bool) ?? false,
                                  method: (object["method"] as? String).flatMap(ClaimMethod.init(rawValue:)))
                noteLeaseFilesOwner(lease)
                return lease
            }
            if !Syscall.isPresent(path) { return nil }
        }
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        return Lease(owner: "\(Lease.unreadablePrefix)\(info.st_ino)", expiresAt: modified + seconds)
    }

    func encode(expiresAt: Double, ended: Bool = false) -> [UInt8] {
        var object: [String: Any] = ["owner": owner, "expires_at": expiresAt, "host": hostID, "method": method.rawValue]
        if ended { object["ended"] = true }
        return JSONObject.encode(object)
    }

    /// A let-go lease's content (`Lease.lettingGo`).
    func encodeLettingGo(_ previousOwner: String) -> [UInt8] {
        let lease = Lease.lettingGo(owner: previousOwner)
        return JSONObject.encode(["owner": lease.owner, "expires_at": lease.expiresAt, "host": hostID, "method": method.rawValue] as [String: Any])
    }

    /// Whether `lease` is judged by its lock rather than by its time: with locks here, and
    /// unless its owner wrote that it holds lease files only (a mount whose locks stay on
    /// its machine): that lease has no lock to probe, so a free lock proves nothing.
    private func judgedByLock(_ lease: Lease?) -> Bool {
        lockMode.load(ordering: .relaxed) && lease?.method != .leaseFiles
    }

    /// A daemon that claims with lease files only shares the spool: it takes a claim over
    /// by its lease's time alone, so for a while (two lease times from the last sign of it)
    /// no claim of this daemon's is kept by its lock past its time. Its own claims stay
    /// locked, and other daemons with locks are still judged by theirs.
    private func noteLeaseFilesOwner(_ lease: Lease) {
        guard lease.method == .leaseFiles, lease.owner != owner, !lease.owner.hasPrefix(Lease.letGoPrefix),
              lockMode.load(ordering: .relaxed) else { return }
        let now = LeaseManager.now()
        let until = now + 2 * (seconds + margin)
        let previous = lockDistrustedUntil.exchange(until.bitPattern, ordering: .relaxed)
        if Double(bitPattern: previous) < now {
            logger.warning("a daemon that claims with lease files only shares this spool: this daemon's claims are kept by their lease time, "
                           + "not by their locks alone, while it is seen", ["other_owner": LogValue(lease.owner)])
        }
    }

    /// Whether this daemon's claims are only as good as their lease's time: without locks,
    /// or while a daemon that claims with lease files only is seen on the spool.
    public var claimsBoundByTime: Bool {
        !lockMode.load(ordering: .relaxed) || Double(bitPattern: lockDistrustedUntil.load(ordering: .relaxed)) > LeaseManager.now()
    }

    func state(_ lease: Lease?) -> LeaseRules.State {
        LeaseRules.state(of: lease, me: owner, now: LeaseManager.now(), margin: margin)
    }

    /// True when someone else holds a lease on `id` that has not expired: the watcher need
    /// not even read the request.
    public func isHeldElsewhere(_ id: String) -> Bool {
        look(id) == .heldElsewhere
    }

    /// What intake needs to know of a request's claim.
    public enum Look: Sendable, Equatable {
        case free
        case heldElsewhere
        /// Claimed by a daemon that is gone (its lease expired, or its lock is free).
        case abandoned
    }

    public func look(_ id: String) -> Look {
        let lease = read(layout.lease(id))
        switch state(lease) {
        case .heldElsewhere:
            // A lease without content yet is being created: its lock may not be taken yet.
            guard judgedByLock(lease), lease?.isWritten == true else { return .heldElsewhere }
            return lockLooksFree(id) ? .abandoned : .heldElsewhere
        case .ended:
            return .heldElsewhere
        case .expired:
            if lease?.ended == true { return .free }
            // With locks, the lock says whether its holder lives, whatever the content says.
            guard judgedByLock(lease), lease?.isWritten == true else { return .abandoned }
            return lockLooksFree(id) ? .abandoned : .heldElsewhere
        case .absent, .mine:
            return .free
        }
    }

    /// With locks: whether another daemon's claim on `id` has lost its lock (its holder is
    /// gone), checked at most once a second per id: a lock is a round trip to the server.
    private func lockLooksFree(_ id: String) -> Bool {
        let now = LeaseManager.now()
        let due = held.withLock { state -> Bool in
            if let last = state.probedAt[id], now - last < 1 { return false }
            state.probedAt[id] = now
            return true
        }
        guard due else { return false }
        let probe: FileDescriptor
        do {
            probe = try FileDescriptor.open(layout.lease(id), O_RDWR | O_NOFOLLOW)
        } catch {
            // Gone or unreadable: no proof its holder is gone, so not taken over.
            return false
        }
        // Closing the description (when `probe` ends here) drops a lock taken here.
        return llms_ofd_lock(probe.rawValue, llms_lock_write) == 0
    }

    /// Whether this daemon holds `id` now (in memory: no file is read).
    public func holds(_ id: String) -> Bool {
        held.withLock { $0.ids.contains(id) }
    }

    /// When the lease of `id` expires as this daemon last wrote it (in memory), nil when it
    /// holds no claim of `id`: a daemon woken from a pause past it cannot know the claim is
    /// still its own until the keeper has looked.
    public func writtenExpiry(_ id: String) -> Double? {
        held.withLock { $0.ids.contains(id) ? $0.expiries[id] : nil }
    }

    /// Claims `id` unless this daemon already holds it.
    public func claimIfNeeded(_ id: String) -> Claim {
        holds(id) ? .claimed : claim(id)
    }

    public func claim(_ id: String) -> Claim {
        var tookOver = false
        return claim(id, tookOver: &tookOver)
    }

    /// Claims `id`; `tookOver` says whether the claim was taken from a daemon that is gone
    /// (its lock free, or its lease expired), whose work on `id` may be under way elsewhere
    /// in the spool (a remote batch of the background lane).
    public func claim(_ id: String, tookOver: inout Bool) -> Claim {
        tookOver = false
        let path = layout.lease(id)
        switch createExclusive(path, bytes: encode(expiresAt: LeaseManager.now() + seconds), lock: lockMode.load(ordering: .relaxed)) {
        case .created(let lock):
            hold(id, lock: lock)
            checkSkew(path)
            return .claimed
        case .exists:
            let lease = read(path)
            switch state(lease) {
            case .heldElsewhere where judgedByLock(lease) && lease?.isWritten == true:
                let claim = takeOverUnlocked(id, judged: lease!)
                tookOver = claim == .claimed
                return claim
            case .absent, .heldElsewhere, .ended:
                return .heldElsewhere  // absent: removed meanwhile; looked at again later
            case .mine where !lockMode.load(ordering: .relaxed) && lease!.expiresAt <= LeaseManager.now():
                // Our own lease, expired on disk: left by a release that could not remove it
                // (another taker's lock). Held as it is, another daemon would take it over
                // too; it is taken over as from anyone.
                return takeOver(id, expired: lease!)
            case .mine:
                hold(id)  // our own create, retransmitted
                return .claimed
            case .expired where judgedByLock(lease):
                // With locks the lock decides, never the content: a cached copy of an old
                // lease can look expired while its new holder is at work.
                let claim = takeOverUnlocked(id, judged: lease!)
                tookOver = claim == .claimed && lease?.ended != true
                return claim
            case .expired:
                let claim = takeOver(id, expired: lease!)
                tookOver = claim == .claimed && lease?.ended != true
                return claim
            }
        case .failed(let message):
            return .failed(message)
        }
    }

    /// Runs a takeover of `id` under its exclusive `<id>.takeover` file, which every taker
    /// creates first, by lock or by time: a daemon whose mount serves locks and one whose
    /// mount does not cannot both take one claim over.
    private func underTakeoverLock(_ id: String, _ takeOver: () -> Claim) -> Claim {
        let lock = layout.takeover(id)
        switch createExclusive(lock, bytes: encode(expiresAt: LeaseManager.now() + seconds), lock: false) {
        case .created:
            break
        case .exists:
            // A taker that died leaves its lock behind; it is broken once it is old.
            if let stale = read(lock), stale.expiresAt + seconds < LeaseManager.now() { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(lock) } }
            return .heldElsewhere
        case .failed(let message):
            return .failed(message)
        }
        defer { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(lock) } }
        return takeOver()
    }

    private func takeOver(_ id: String, expired: Lease) -> Claim {
        underTakeoverLock(id) { takeOverHoldingLock(id, expired: expired) }
    }

    private func takeOverHoldingLock(_ id: String, expired: Lease) -> Claim {
        guard read(layout.lease(id)) == expired else { return .heldElsewhere }  // renewed or taken meanwhile
        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(layout.lease(id)) }
        if expired.ended {
            logger.debug("an expired tombstone was replaced by a new claim", id: id)
        } else {
            logger.warning("took over an expired lease", id: id, ["previous_owner": LogValue(expired.owner)])
        }
        switch createExclusive(layout.lease(id), bytes: encode(expiresAt: LeaseManager.now() + seconds), lock: lockMode.load(ordering: .relaxed)) {
        case .created(let lock):
            hold(id, lock: lock)
            return .claimed
        case .exists:
            guard read(layout.lease(id)).map({ $0.owner == owner && !$0.ended }) == true else { return .heldElsewhere }
            hold(id)
            return .claimed
        case .failed(let message):
            return .failed(message)
        }
    }

    private func hold(_ id: String, lock: DescriptorOwner? = nil) {
        // Written just before: the expiry is at most this late, never earlier.
        let expires = LeaseManager.now() + seconds
        let previous = held.withLock { state -> DescriptorOwner? in
            state.ids.insert(id)
            state.expiries[id] = expires
            state.tombstones[id] = nil
            let previous = state.fds[id]
            // A claim found to be ours already (`.mine`) comes without a lock: the one that
            // holds it stays, or closing it would free the claim to any prober.
            state.fds[id] = lock ?? previous
            return previous
        }
        // Closed outside the lock: a close on a network filesystem can take a round trip.
        if let previous, let lock, previous !== lock { previous.discard() }
    }

    /// With locks: a claim whose lock is free belongs to a daemon that is gone (killed,
    /// crashed, its machine down), since a live one holds its lock for as long as it holds
    /// the claim, tombstones included. The lock is then ours at once, without waiting for
    /// the lease time. A lease not yet written (created, not yet locked) is left alone for
    /// a lease time after its creation; past it, its creator died between the create and the
    /// write (a SIGKILL there left an empty lease that barred its id for ever).
    private func takeOverUnlocked(_ id: String, judged: Lease) -> Claim {
        underTakeoverLock(id) { takeOverUnlockedHoldingLock(id, judged: judged) }
    }

    private func takeOverUnlockedHoldingLock(_ id: String, judged: Lease) -> Claim {
        let path = layout.lease(id)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDWR | O_NOFOLLOW)
        } catch {
            // Gone (ended or taken meanwhile) or unreadable: not ours to take; looked at again later.
            return .heldElsewhere
        }
        guard llms_ofd_lock(file.rawValue, llms_lock_write) == 0 else { return .heldElsewhere }
        // The lock must be on the file the name holds now, not one removed meanwhile.
        // And it must still be the lease judged free: not a claim made since, by time
        // (a lease-files daemon's holds no lock) or by lock.
        guard sameFile(file, path), let lease = read(path), lease == judged, judgedByLock(lease),
              lease.isWritten || state(lease) == .expired, state(lease) != .ended else {
            return .heldElsewhere
        }
        do {
            let bytes = encode(expiresAt: LeaseManager.now() + seconds)
            try file.writeAll(bytes)  // the descriptor is at offset 0
            try Syscall.ftruncate(file.rawValue, length: bytes.count, path: path)
        } catch {
            return .failed("\(error)")
        }
        logger.warning("took over the claim of a daemon that is gone (its lock was free)", id: id, ["previous_owner": LogValue(lease.owner)])
        hold(id, lock: DescriptorOwner(file))
        return .claimed
    }

    /// Chooses lease files or locks for the spool's filesystem (see `ClaimMethod`), with a
    /// probe of two descriptors on one file in `state/leases`. Call once, before any claim.
    @discardableResult
    public func chooseMethod() -> (method: ClaimMethod, reason: String) {
        let probe = probeLocks()
        let mountinfo = logger.bestEffortValue("reading /proc/self/mountinfo", { try FileReader.prefix(path: "/proc/self/mountinfo", limit: 4 << 20) }).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let real = realpath(layout.leases, nil).map { pointer -> String in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? layout.leases
        let mount = ClaimMethod.mount(of: real, mountinfo: mountinfo) ?? (type: "unknown", options: [])
        let choice = ClaimMethod.choose(filesystem: mount.type, options: mount.options, probe: probe)
        lockMode.store(choice.method == .locks, ordering: .relaxed)
        return choice
    }

    /// Lease files alone, whatever locks the filesystem serves: tests use it to run, on a
    /// local folder, what happens where there are no locks (a daemon paused past its lease
    /// loses its claims, which a lock would keep for it).
    public func useLeaseFiles(reason: String) -> (method: ClaimMethod, reason: String) {
        lockMode.store(false, ordering: .relaxed)
        return (.leaseFiles, reason)
    }

    /// Two descriptors of one file: the second must be refused the lock the first holds,
    /// and granted it once the first lets go.
    func probeLocks() -> ClaimMethod.Probe {
        let path = "\(layout.leases)/.probe-\(owner.replacingOccurrences(of: ":", with: "-"))"
        // A probe that cannot open its file fails with the errno: the caller logs the method
        // it chose and why.
        let first: FileDescriptor
        do {
            first = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: layout.fileMode)
        } catch {
            logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) }
            return .failed(errno: (error as? SystemError)?.errno ?? EIO)
        }
        let probe: ClaimMethod.Probe
        do {
            let second = try FileDescriptor.open(path, O_RDWR | O_NOFOLLOW)
            probe = LeaseManager.probeLocks(first.rawValue, second.rawValue)
        } catch {
            probe = .failed(errno: (error as? SystemError)?.errno ?? EIO)
        }
        // Removed while `first` is still open: a close followed at once by the unlink left it
        // on sshfs as `state/leases/.fuse_hidden*` now and then (`FileDescriptor.unlinkThenClose`).
        do {
            try first.unlinkThenClose(path)
        } catch let error as SystemError where error.errno == ENOENT {
        } catch {
            logger.warning("removing a leftover failed; carrying on", ["reason": "\(error)"])
        }
        return probe
    }

    /// The lock probe proper, on two descriptors of one file.
    private static func probeLocks(_ first: Int32, _ second: Int32) -> ClaimMethod.Probe {
        guard llms_ofd_lock(first, llms_lock_write) == 0 else { return .failed(errno: errno) }
        if llms_ofd_lock(second, llms_lock_write) == 0 { return .noConflict }
        guard errno == EAGAIN || errno == EACCES else { return .failed(errno: errno) }
        guard llms_ofd_lock(first, llms_lock_unlock) == 0 else { return .failed(errno: errno) }
        // A network lock manager may take a moment to hand the lock on.
        for _ in 0..<50 {
            if llms_ofd_lock(second, llms_lock_write) == 0 { return .works }
            usleep(10_000)
        }
        return .neverReleased
    }

    /// Still ours: safe to publish. With locks the claim is the lock, which no daemon takes
    /// from a live owner however late its lease's time reads (a pause, a clock ahead of the
    /// file server's); lease files alone are only as good as their time.
    public func stillMine(_ id: String) -> Bool {
        claimState(id) == .mine
    }

    /// Whose the claim on `id` is, as far as its lease file proves it.
    public enum ClaimState: Sendable, Equatable {
        /// `stillMine`.
        case mine
        /// Proven not this daemon's: not held here, its lease gone, another's, or ended.
        case lost
        /// This daemon's lease, its time passed: nobody may have taken it yet, or a taker may
        /// be at work on the batch under the old one's name (a pause outlasted it).
        case lapsed
        /// Not proven either way: the lease cannot be read now (ESTALE, EIO, caught half written).
        case unknown
    }

    /// `stillMine` with what cannot be told kept apart from a loss: a step that destroys
    /// (a name taken back) or forgets (a held end) is taken on `.lost` only.
    public func claimState(_ id: String) -> ClaimState {
        guard holds(id) else { return .lost }
        let path = layout.lease(id)
        guard let lease = read(path) else { return leaseIsGone(path) ? .lost : .unknown }
        if lease.owner.hasPrefix(Lease.unreadablePrefix) { return .unknown }
        guard lease.owner == owner, !lease.ended else { return .lost }
        return holdsLock(id) || lease.expiresAt > LeaseManager.now() ? .mine : .lapsed
    }

    /// Whether the claim on `id` is held by a lock this daemon keeps open.
    private func holdsLock(_ id: String) -> Bool {
        !claimsBoundByTime && held.withLock { $0.fds[id]?.isHeld ?? false }
    }

    /// Gives up the claim on `id`. `ended`: the task ended here (done, failed, cancelled,
    /// gone): the lease becomes a tombstone, so no stale view of the request can be claimed
    /// for a lease time. Otherwise (a retry later, a shutdown) the lease is removed, so any
    /// daemon may take the request at once.
    public func release(_ id: String, ended: Bool) {
        release(id, ended: ended, leaveExpired: false)
    }

    /// Gives up the claim on `id` for another daemon to take up (not ended), leaving its
    /// lease expired instead of removing it (`Lease.lettingGo`): the next claim of `id`, by
    /// any daemon, is then a takeover (`claim`'s `tookOver`). A request let go because it is
    /// a member of another daemon's remote batch needs that: should that daemon die before
    /// it claims the request, its group may have been recorded after the next claimer's
    /// last look at `state/remote`, and only a takeover makes the claimer look again.
    public func letGo(_ id: String) {
        release(id, ended: false, leaveExpired: true)
    }

    private func release(_ id: String, ended: Bool, leaveExpired: Bool) {
        // Wait while the keeper renews this very lease: a renewal after the release would
        // bring the lease back.
        while true {
            let removed = held.withLock { state -> Bool? in
                if state.renewing == id { return nil }
                state.expiries[id] = nil
                return state.ids.remove(id) != nil
            }
            guard let wasHeld = removed else {
                usleep(1_000)
                continue
            }
            guard wasHeld else { return }
            break
        }
        let lock = held.withLock { $0.fds.removeValue(forKey: id) }
        let path = layout.lease(id)
        guard let lease = read(path), lease.owner == owner, !lease.ended else {
            lock?.discard()
            return
        }
        if ended {
            do {
                try rewrite(path, encode(expiresAt: LeaseManager.now() + tombstoneSeconds, ended: true))
                // With locks the tombstone stays locked: the lock says its owner lives.
                held.withLock {
                    $0.tombstones[id] = LeaseManager.now()
                    if let lock { $0.fds[id] = lock }
                }
                return
            } catch {
                logger.warning("cannot leave a tombstone; removing the lease", id: id, ["reason": "\(error)"])
            }
        } else if leaveExpired {
            // Rewritten before the lock goes: with locks, no taker reads it half-written.
            do {
                try rewrite(path, encodeLettingGo(owner))
                lock?.discard()
                return
            } catch {
                logger.warning("cannot leave the lease expired; removing it", id: id, ["reason": "\(error)"])
            }
        }
        // A lease file already expired may be under another daemon's takeover at this moment
        // (it removes the expired lease and writes its own under the name): removed now, the
        // new claim could go instead. So it is removed as takers remove one, under the takeover
        // lock and only while it is still this one. (Left in place instead, this daemon's own
        // next claim would take it back as its own without writing it, expired on disk.)
        // Under a lock no one takes it while this daemon holds the lock.
        if lock == nil, lease.expiresAt <= LeaseManager.now() {
            let takeover = layout.takeover(id)
            guard case .created = createExclusive(takeover, bytes: encode(expiresAt: LeaseManager.now() + seconds), lock: false) else { return }
            if read(path) == lease { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) } }
            logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(takeover) }
            return
        }
        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) }
        lock?.discard()
    }

    /// Rewrites a lease in place (see the type's notes on `.fuse_hidden`). A reader that
    /// catches it half-written cannot parse it and treats it as held by someone (its
    /// mtime is fresh), which only ever refuses a claim.
    private func rewrite(_ path: String, _ bytes: [UInt8]) throws {
        let lease = try FileDescriptor.open(path, O_WRONLY | O_NOFOLLOW)
        try lease.writeAll(bytes)
        try Syscall.ftruncate(lease.rawValue, length: bytes.count, path: path)
    }

    /// Renews every held lease a few times per lease period; calls `lost` for a lease that
    /// someone else holds now.
    public func startKeeper(lost: @escaping @Sendable (String) -> Void) {
        keeperStarted.store(true, ordering: .relaxed)
        NamedThread.start("leases") { [self] in
            let interval = seconds / 3
            var lastHousekeeping = LeaseManager.now()
            var lastSlowWarning = -Double.infinity
            while !stopRequested.load(ordering: .relaxed) {
                var slept = 0.0
                while slept < interval && !stopRequested.load(ordering: .relaxed) {
                    usleep(100_000)
                    slept += 0.1
                }
                let started = LeaseManager.now()
                renewAll(lost: lost)
                let took = LeaseManager.now() - started
                if took > interval, started - lastSlowWarning > 60 {
                    // Another renewal this late and the leases expire under their holder.
                    lastSlowWarning = started
                    logger.warning("renewing the leases took longer than a third of lease_seconds; raise lease_seconds on this filesystem",
                                   ["seconds": "\((took * 10).rounded() / 10)", "lease_seconds": "\(seconds)"])
                }
                // Housekeeping reads every lease in the folder: on a slow network mount
                // it must not delay the renewals, which keep claims alive. It runs once a
                // lease period at most, and stops when the next renewal is due.
                guard started - lastHousekeeping >= max(seconds, 5) else { continue }
                lastHousekeeping = started
                let deadline = started + interval
                removeOldTombstones(olderThan: tombstoneSeconds)
                removeExpiredTombstones(until: deadline)
                if LeaseManager.now() < deadline { removeFuseHidden(olderThan: 10) }
            }
            stopped.signal()
        }
    }

    private func renewAll(lost: @Sendable (String) -> Void) {
        for id in held.withLock({ $0.ids }) {
            let marked = held.withLock { state -> Bool in
                guard state.ids.contains(id) else { return false }
                state.renewing = id
                return true
            }
            guard marked else { continue }
            let path = layout.lease(id)
            let lease = read(path)
            if lease == nil || lease?.isWritten == false, !leaseIsGone(path) {
                // Unreadable is not taken: a slow or failing read on a loaded network mount
                // must not discard a transfer. Left alone this round (another daemon may own
                // it now: rewriting could clobber its claim), read again the next.
                logger.debug("cannot read a held lease; trying again at the next renewal", id: id)
                held.withLock { $0.renewing = nil }
                continue
            }
            if let lease, lease.owner == owner, !lease.ended {
                var renewed: Double?
                do {
                    let expires = LeaseManager.now() + seconds
                    try rewrite(path, encode(expiresAt: expires))
                    renewed = expires
                } catch {
                    logger.warning("cannot renew a lease", id: id, ["reason": "\(error)"])
                }
                held.withLock { state in
                    state.renewing = nil
                    if let renewed, state.ids.contains(id) { state.expiries[id] = renewed }
                }
            } else {
                let (wasHeld, lock) = held.withLock { state -> (Bool, DescriptorOwner?) in
                    state.renewing = nil
                    state.expiries[id] = nil
                    return (state.ids.remove(id) != nil, state.fds.removeValue(forKey: id))
                }
                lock?.discard()
                if wasHeld {
                    logger.warning("lease lost to another daemon; discarding this attempt", id: id)
                    lost(id)
                }
            }
        }
    }

    /// Whether the lease file is certainly gone (taken over and not yet recreated); an
    /// error other than its absence is no proof.
    private func leaseIsGone(_ path: String) -> Bool {
        do {
            return try !Syscall.exists(path)
        } catch {
            return false
        }
    }

    /// Removes our tombstones written more than `age` seconds ago (all of them with 0).
    private func removeOldTombstones(olderThan age: Double) {
        let now = LeaseManager.now()
        let due = held.withLock { state -> [(String, DescriptorOwner?)] in
            let due = state.tombstones.filter { now - $0.value >= age }.map(\.key)
            for id in due { state.tombstones[id] = nil }
            state.probedAt = state.probedAt.filter { now - $0.value < 60 }
            return due.map { ($0, state.fds.removeValue(forKey: $0)) }
        }
        for (id, lock) in due {
            let path = layout.lease(id)
            if let lease = read(path), lease.ended, lease.host == hostID { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) } }
            lock?.discard()
        }
    }

    /// The names in `state/leases`; none when it cannot be listed, which is logged: the
    /// sweeps that list it are then skipped, and the operator must hear why.
    private func leaseNames() -> [String] {
        do {
            return try Syscall.listDirectory(layout.leases)
        } catch {
            logger.warning("cannot list the leases; expired leases and leftovers stay until it can", ["reason": "\(error)"])
            return []
        }
    }

    /// Removes any daemon's tombstone long expired (its owner stopped without removing it),
    /// through the takeover lock, like any other expired lease.
    func removeExpiredTombstones(until deadline: Double = .infinity) {
        let now = LeaseManager.now()
        let names = leaseNames().filter { $0.hasSuffix(".lease") }
        // Cut short by the deadline, the next round goes on where this one stopped.
        let start = names.isEmpty ? 0 : housekeepingCursor.load(ordering: .relaxed) % names.count
        for (step, name) in (names[start...] + names[..<start]).enumerated() {
            if LeaseManager.now() >= deadline {
                housekeepingCursor.store(start + step, ordering: .relaxed)
                return
            }
            let id = String(name.dropLast(".lease".count))
            guard let lease = read(layout.lease(id)), lease.ended, lease.expiresAt + margin < now else { continue }
            if lockMode.load(ordering: .relaxed) {
                // Its owner holds it locked until it removes it itself; a free lock means the owner is gone.
                let probe: FileDescriptor
                do {
                    probe = try FileDescriptor.open(layout.lease(id), O_RDWR | O_NOFOLLOW)
                } catch {
                    // Gone already, or unreadable this round: the next round looks again.
                    continue
                }
                guard llms_ofd_lock(probe.rawValue, llms_lock_write) == 0, sameFile(probe, layout.lease(id)),
                      read(layout.lease(id)) == lease else { continue }
                logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(layout.lease(id)) }
                continue
            }
            let lock = layout.takeover(id)
            guard case .created = createExclusive(lock, bytes: encode(expiresAt: now + seconds), lock: false) else { continue }
            if read(layout.lease(id)) == lease { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(layout.lease(id)) } }
            logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(lock) }
        }
    }

    /// A FUSE mount (sshfs) keeps a file removed while open as `.fuse_hidden*`, and such
    /// files can outlive the open. Nothing in `state/leases` is held open for long, so an
    /// old one is a leftover.
    private func removeFuseHidden(olderThan age: Double) {
        let now = LeaseManager.now()
        for name in leaseNames() where name.hasSuffix(".takeover") {
            // A taker holds its lock for a moment; one left behind (its taker died, or an
            // exclusive create answered with an error after all) is ours to remove at a
            // stop (`age` 0), anyone's once it is as old as a taker would break.
            let path = "\(layout.leases)/\(name)"
            guard let lock = read(path) else { continue }
            if (age == 0 && lock.owner == owner) || lock.expiresAt + seconds < now { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) } }
        }
        for name in leaseNames() where name.hasPrefix(".fuse_hidden") {
            let path = "\(layout.leases)/\(name)"
            guard let info = logger.bestEffortValue("looking at a leftover", { try Syscall.lstat(path) }) else { continue }
            if now - (Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9) >= age { logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) } }
        }
    }

    /// Stops the keeper, then removes this daemon's tombstones once they have covered the
    /// few seconds in which client caches can still show their requests.
    public func stopKeeper() {
        stopRequested.store(true, ordering: .relaxed)
        if keeperStarted.load(ordering: .relaxed) { stopped.wait() }
        let newest = held.withLock { $0.tombstones.values.max() } ?? 0
        let wait = min(LeaseManager.staleCacheSeconds, tombstoneSeconds) - (LeaseManager.now() - newest)
        if wait > 0 { usleep(UInt32(min(wait, LeaseManager.staleCacheSeconds) * 1_000_000)) }
        removeOldTombstones(olderThan: 0)
        removeFuseHidden(olderThan: 0)
    }

    /// How long client caches may show a file another client removed: GlusterFS's
    /// md-cache and quick-read about a second (measured up to 0.9 s), with room to spare.
    public static let staleCacheSeconds = 2.0

    /// Takes back at once the leases of this host's earlier runs that died (killed, or the
    /// machine restarted): their requests need not wait for the lease time. Returns the
    /// ids taken back.
    public func reclaimDeadIncarnations() -> [String] {
        var reclaimed: [String] = []
        for name in leaseNames() where name.hasSuffix(".lease") {
            let path = "\(layout.leases)/\(name)"
            guard let lease = read(path) else { continue }
            if lease.ended, lease.host == hostID, let pid = lease.pid, pid != getpid(), !LeaseManager.isAlive(pid) {
                // Its tombstones become ours, to be removed once they expire.
                let id = String(name.dropLast(".lease".count))
                held.withLock { $0.tombstones[id] = lease.expiresAt - seconds }
                continue
            }
            // With locks, a dead run's claims are free already: the next claim takes them.
            guard !lockMode.load(ordering: .relaxed),
                  LeaseRules.isDeadIncarnation(lease, hostID: hostID, myPID: getpid(), isAlive: LeaseManager.isAlive) else { continue }
            // Re-read just before the rewrite: a taker may have replaced it meanwhile. Left
            // expired, not removed (`Lease.lettingGo`): its next claim, ours or another
            // daemon's, is a takeover, which makes the background lane look for a group the
            // dead run recorded for it.
            guard read(path) == lease else { continue }
            do {
                try rewrite(path, encodeLettingGo(lease.owner))
            } catch {
                logger.warning("cannot leave an earlier run's lease expired; removing it", ["lease": LogValue(path), "reason": "\(error)"])
                logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) }
            }
            reclaimed.append(String(name.dropLast(".lease".count)))
        }
        return reclaimed
    }

    static func isAlive(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Runs `remove` if a starting daemon may remove a leftover file of `id` (see
    /// `LeaseRules`); returns whether it ran. With locks, the lease's lock decides, and is
    /// held while `remove` runs, so no daemon can take the id over meanwhile.
    public func removeLeftover(of id: String, _ remove: () -> Void) -> Bool {
        if lockMode.load(ordering: .relaxed), judgedByLock(read(layout.lease(id))) {
            let lease: FileDescriptor
            do {
                lease = try FileDescriptor.open(layout.lease(id), O_RDWR | O_NOFOLLOW)
            } catch let error as SystemError where RequestFile.isGone(error.errno) {
                remove()
                return true
            } catch {
                return false
            }
            // The lock lives as long as `lease`, which closes at the end of this scope.
            guard llms_ofd_lock(lease.rawValue, llms_lock_write) == 0 else { return false }
            // A lease-files claim made since holds no lock: the rules of time decide for it.
            let current = read(layout.lease(id))
            guard current == nil || judgedByLock(current) || LeaseRules.mayRemoveLeftover(lease: current, me: owner, hostID: hostID, myPID: getpid(),
                                                                                  now: LeaseManager.now(), margin: margin,
                                                                                  isAlive: LeaseManager.isAlive) else { return false }
            remove()
            return true
        }
        guard LeaseRules.mayRemoveLeftover(lease: read(layout.lease(id)), me: owner, hostID: hostID, myPID: getpid(), now: LeaseManager.now(),
                                           margin: margin, isAlive: LeaseManager.isAlive) else { return false }
        remove()
        return true
    }

    /// Whether `file` is still the file `path` names: a lock on a file removed meanwhile
    /// guards nothing. An error (the name gone, or unreadable) counts as no.
    private func sameFile(_ file: borrowing FileDescriptor, _ path: String) -> Bool {
        do {
            return try file.fstat().st_ino == Syscall.lstat(path).st_ino
        } catch {
            return false
        }
    }

    enum Created {
        /// With the locked descriptor, kept open, when `lock` was asked; nil otherwise.
        case created(DescriptorOwner?)
        case exists
        case failed(String)
    }

    /// `lock`: the new file is locked before anything is written to it, so a lease with
    /// content is always locked while its owner lives.
    private func createExclusive(_ path: String, bytes: [UInt8], lock: Bool) -> Created {
        do {
            let file: FileDescriptor
            do {
                file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: layout.fileMode)
            } catch let error as SystemError where error.errno == ENOENT && !Syscall.isPresent(layout.leases) {
                // `state` or `state/leases` deleted while running: made again (logged), or
                // no request could be claimed until the next scan finds it.
                layout.recreateMissingFolders(logger: logger)
                if !Syscall.isPresent(layout.leases) {
                    logger.warning("a spool folder was missing; recreated", ["path": LogValue(layout.leases)])
                    do { try Syscall.mkdir(layout.leases, mode: layout.directoryMode) } catch let error as SystemError where error.errno == EEXIST {}
                }
                file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: layout.fileMode)
            }
            if lock {
                // Another daemon's probe may hold the lock for a moment.
                var locked = llms_ofd_lock(file.rawValue, llms_lock_write) == 0
                for _ in 0..<50 where !locked {
                    usleep(2_000)
                    locked = llms_ofd_lock(file.rawValue, llms_lock_write) == 0
                }
                guard locked else {
                    let code = errno
                    // Ours by the exclusive create: removed unless the name holds another file by now.
                    if sameFile(file, path) {
                        logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent(path) }
                    }
                    return .failed("cannot lock \(path): errno \(code)")
                }
            }
            try file.writeAll(bytes)
            // Without a lock the lease is its content alone: the file closes here.
            return .created(lock ? DescriptorOwner(file) : nil)
        } catch let error as SystemError where LeaseRules.createFailure(errno: error.errno, fileExists: { Syscall.isPresent(path) }) == .exists {
            return .exists
        } catch {
            return .failed("\(error)")
        }
    }

    /// The server stamps the lease's mtime; a local clock far from it makes leases unsafe.
    private func checkSkew(_ path: String) {
        guard !skewWarned.load(ordering: .relaxed), let info = logger.bestEffortValue("looking at a lease's time", { try Syscall.lstat(path) }) else { return }
        let serverTime = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        let skew = abs(serverTime - LeaseManager.now())
        // A server that keeps whole seconds (SFTP) stamps up to a second behind: no skew.
        let grain = info.st_mtim.tv_nsec == 0 && serverTime <= LeaseManager.now() ? Self.timestampGrainSeconds : 0
        if skew - grain > margin / 2 && !skewWarned.exchange(true, ordering: .relaxed) {
            logger.warning("this machine's clock differs from the file server's; leases assume clocks within lease_seconds/3",
                           ["skew_seconds": LogValue(String(format: "%.1f", skew)), "lease_seconds": "\(seconds)"])
        }
    }
}
