import Glibc

/// The decisions behind claims on a shared spool, as pure functions of what was read: what
/// a lease file means, what an exclusive create's error means, which records a
/// cancellation may overwrite, and which leftovers a starting daemon may remove.
public enum LeaseRules {
    /// A lease file's content.
    public struct Lease: Equatable, Sendable {
        public var owner: String
        public var expiresAt: Double
        /// A tombstone: the task ended; the id may not be claimed until it expires. Stale
        /// client caches (GlusterFS keeps a deleted file readable for about a second) can
        /// show another daemon a request that was just answered; its claim must fail.
        public var ended: Bool
        /// How its owner holds its claims, as it wrote; nil in a lease of an earlier
        /// version, which is judged as a lock's (as it was then).
        public var method: ClaimMethod?

        public init(owner: String, expiresAt: Double, ended: Bool = false, method: ClaimMethod? = nil) {
            self.owner = owner
            self.expiresAt = expiresAt
            self.ended = ended
            self.method = method
        }

        /// The owner given to a lease file whose content cannot be read (being written).
        public static let unreadablePrefix = "unreadable@"

        /// The owner of a lease let go for another daemon to take up (`lettingGo`).
        public static let letGoPrefix = "let-go@"

        /// The lease left in place of one given up for another daemon to take up, instead of
        /// no file: expired for every daemon, its former owner included (its owner is not
        /// theirs), so that the next claim of its id is a takeover, never a fresh create. The
        /// background lane lists `state/remote` again after a takeover: a group recorded for
        /// the request since the claimer last looked, by a daemon that died before claiming
        /// it, is then adopted, not sent a second time (`RemoteGroupClaims.mustList`).
        public static func lettingGo(owner: String) -> Lease {
            Lease(owner: letGoPrefix + owner, expiresAt: 0)
        }

        /// Whether the lease had content: its creator wrote it (and, with locks, locked it first).
        public var isWritten: Bool { !owner.hasPrefix(Self.unreadablePrefix) }

        /// The host id in an owner `host:pid:tag`.
        public var host: String { Self.parts(owner).host }
        /// The pid in an owner `host:pid:tag`, if it has one.
        public var pid: Int32? { Self.parts(owner).pid }

        static func parts(_ owner: String) -> (host: String, pid: Int32?) {
            // Host ids may hold colons; the pid and tag are the last two fields.
            let fields = owner.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count >= 3, let pid = Int32(fields[fields.count - 2]) else { return (owner, nil) }
            return (fields.dropLast(2).joined(separator: ":"), pid)
        }
    }

    /// What a lease means to the daemon `me`.
    public enum State: Equatable, Sendable {
        /// No lease: free to claim.
        case absent
        /// Ours and live.
        case mine
        /// Another daemon's, live.
        case heldElsewhere
        /// The id ended a moment ago (by anyone, us included): not to be claimed.
        case ended
        /// Past its expiry (and, for a live claim, the margin): may be taken over.
        case expired
    }

    public static func state(of lease: Lease?, me: String, now: Double, margin: Double) -> State {
        guard let lease else { return .absent }
        if lease.ended { return lease.expiresAt > now ? .ended : .expired }
        if lease.owner == me { return .mine }
        return lease.expiresAt + margin > now ? .heldElsewhere : .expired
    }

    /// A live claim whose owner is a dead process of this host: our own earlier run, killed.
    /// Its work can be taken back at once instead of after the lease time.
    public static func isDeadIncarnation(_ lease: Lease, hostID: String, myPID: Int32, isAlive: (Int32) -> Bool) -> Bool {
        guard !lease.ended, lease.host == hostID, let pid = lease.pid, pid != myPID else { return false }
        return !isAlive(pid)
    }

    /// What an exclusive create that failed with `errno` means.
    public enum CreateFailure: Equatable, Sendable {
        case exists
        case failed
    }

    /// sshfs answers `EPERM` (and some servers `EACCES`) where `EEXIST` is meant: whether
    /// the file exists decides.
    public static func createFailure(errno code: Int32, fileExists: () -> Bool) -> CreateFailure {
        switch code {
        case EEXIST: .exists
        case EPERM, EACCES: fileExists() ? .exists : .failed
        default: .failed
        }
    }

    /// A cancellation records itself only over a task that has not ended otherwise: a
    /// `done` or `failed` record is never turned into `cancelled`.
    public static func mayRecordCancelled(over existing: TaskRecord.Status?) -> Bool {
        switch existing {
        case nil, .active?, .cancelled?: true
        case .done?, .failed?: false
        }
    }

    /// Whether a request's file leaving `outgoing` is the clean-up of its task's end (no
    /// outcome to report) rather than a withdrawal, by the record alone: it says the task
    /// ended, and for the file that left, when its identity is known, not for an older
    /// file of the same name. Records written through another mount are compared as such.
    /// The finisher asks this only without the file's identity; with it, what a restart
    /// would decide (`Recovery.decide`) answers, the result included.
    public static func removalFollowsAnEnd(record: TaskRecord?, removed: FileIdentity?) -> Bool {
        guard let record, record.status == .done || record.status == .failed else { return false }
        guard let removed, let recorded = record.request else { return true }
        return removed.isSameInstance(as: recorded) || removed.isSameInstanceAcrossMounts(as: recorded)
    }

    /// Whether a starting daemon may remove a leftover (`.partial`, hidden temporary) of
    /// request `id`: not while another live daemon holds the id, since it is that
    /// daemon's file.
    public static func mayRemoveLeftover(lease: Lease?, me: String, hostID: String, myPID: Int32, now: Double, margin: Double,
                                         isAlive: (Int32) -> Bool) -> Bool {
        guard let lease else { return true }
        if isDeadIncarnation(lease, hostID: hostID, myPID: myPID, isAlive: isAlive) { return true }
        switch state(of: lease, me: me, now: now, margin: margin) {
        case .absent, .mine, .expired, .ended: return true
        case .heldElsewhere: return false
        }
    }

    /// The id a leftover's name belongs to: `<id>.partial`, `.<id>.json.tmp`,
    /// `.<id>.error.json.tmp`, a prompt file's `.<id>.sse.tmp` and `.<id>.md.tmp`; nil for
    /// other names.
    public static func leftoverID(_ name: String) -> String? {
        if name.hasSuffix(SpoolLayout.partialSuffix) && !name.hasPrefix(SpoolLayout.hiddenPrefix) {
            return String(name.dropLast(SpoolLayout.partialSuffix.count))
        }
        guard name.hasPrefix(SpoolLayout.hiddenPrefix), name.hasSuffix(SpoolLayout.temporarySuffix) else { return nil }
        var stem = String(name.dropFirst(SpoolLayout.hiddenPrefix.count).dropLast(SpoolLayout.temporarySuffix.count))
        for suffix in [SpoolLayout.errorRecordSuffix, SpoolLayout.requestSuffix, SpoolLayout.rawStreamSuffix, PromptRequestFormat.transcriptSuffix]
        where stem.hasSuffix(suffix) {
            stem.removeLast(suffix.count)
            return stem.isEmpty ? nil : stem
        }
        return nil
    }
}
