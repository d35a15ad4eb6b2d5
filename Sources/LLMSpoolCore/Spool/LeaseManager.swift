import Foundation
import Glibc
import Synchronization

/// Claims on requests for daemons sharing one spool (over NFS or SMB, as Maildir does),
/// built only on what such filesystems make atomic: exclusive create and rename. Never
/// `flock`.
///
/// - Claim: `O_CREAT|O_EXCL` of `state/leases/<id>.lease`, holding the owner and an expiry.
///   An EEXIST may be the server's answer to a create it already did for us (a
///   retransmission), so it is confirmed by reading the lease back.
/// - Renew: a keeper thread rewrites each held lease (temporary + rename) every third of the
///   lease time, after checking it is still ours; a lease found taken is reported lost.
/// - Take over: a lease past its expiry plus the margin may be broken by whoever wins the
///   `O_EXCL` create of `<id>.takeover`; the winner checks the lease is still the expired
///   one, removes it, claims it afresh and drops the takeover lock.
/// - Publish: the finisher asks `stillMine` first; a daemon that lost its lease (paused,
///   partitioned) discards its attempt and touches nothing of the new owner's.
public final class LeaseManager: Sendable {
    /// The result of a claim.
    public enum Claim: Sendable, Equatable {
        case claimed
        case heldElsewhere
        case failed(String)
    }

    struct Lease: Equatable {
        var owner: String
        var expiresAt: Double
    }

    public let owner: String
    public let seconds: Double
    /// Clocks may differ this much between machines before a lease is trusted less.
    public var margin: Double { max(1, seconds / 3) }
    private let layout: SpoolLayout
    private let logger: Logger
    private let held = Mutex<Set<String>>([])
    private let stopRequested = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    private let skewWarned = Atomic<Bool>(false)

    public init(layout: SpoolLayout, hostID: String, seconds: Double, logger: Logger) {
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
        guard let info = try? Syscall.lstat(path) else { return nil }
        if let bytes = try? FileReader.prefix(path: path, limit: 4096), let object = JSONObject.parse(bytes),
           let owner = object["owner"] as? String, let expires = (object["expires_at"] as? NSNumber)?.doubleValue {
            return Lease(owner: owner, expiresAt: expires)
        }
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        return Lease(owner: "unreadable@\(info.st_ino)", expiresAt: modified + seconds)
    }

    func encode(expiresAt: Double) -> [UInt8] {
        JSONObject.encode(["owner": owner, "expires_at": expiresAt, "host": owner.split(separator: ":").first.map(String.init) ?? owner] as [String: Any])
    }

    /// True when someone else holds a lease on `id` that has not expired: the watcher need
    /// not even read the request.
    public func isHeldElsewhere(_ id: String) -> Bool {
        guard let lease = read(layout.lease(id)) else { return false }
        return lease.owner != owner && lease.expiresAt + margin > LeaseManager.now()
    }

    public func claim(_ id: String) -> Claim {
        let path = layout.lease(id)
        switch createExclusive(path, bytes: encode(expiresAt: LeaseManager.now() + seconds)) {
        case .created:
            held.withLock { _ = $0.insert(id) }
            checkSkew(path)
            return .claimed
        case .exists:
            guard let lease = read(path) else { return .heldElsewhere }  // removed meanwhile: later
            if lease.owner == owner {
                held.withLock { _ = $0.insert(id) }  // our own create, retransmitted
                return .claimed
            }
            if lease.expiresAt + margin > LeaseManager.now() { return .heldElsewhere }
            return takeOver(id, expired: lease)
        case .failed(let message):
            return .failed(message)
        }
    }

    private func takeOver(_ id: String, expired: Lease) -> Claim {
        let lock = layout.takeover(id)
        switch createExclusive(lock, bytes: encode(expiresAt: LeaseManager.now() + seconds)) {
        case .created:
            break
        case .exists:
            // A taker that died leaves its lock behind; it is broken once it is old.
            if let stale = read(lock), stale.expiresAt + seconds < LeaseManager.now() { try? Syscall.unlinkIfPresent(lock) }
            return .heldElsewhere
        case .failed(let message):
            return .failed(message)
        }
        defer { try? Syscall.unlinkIfPresent(lock) }
        guard read(layout.lease(id)) == expired else { return .heldElsewhere }  // renewed or taken meanwhile
        try? Syscall.unlinkIfPresent(layout.lease(id))
        logger.warning("took over an expired lease", id: id, ["previous_owner": expired.owner])
        switch createExclusive(layout.lease(id), bytes: encode(expiresAt: LeaseManager.now() + seconds)) {
        case .created:
            held.withLock { _ = $0.insert(id) }
            return .claimed
        case .exists:
            return read(layout.lease(id))?.owner == owner ? .claimed : .heldElsewhere
        case .failed(let message):
            return .failed(message)
        }
    }

    /// Still ours and not expired: safe to publish.
    public func stillMine(_ id: String) -> Bool {
        guard let lease = read(layout.lease(id)) else { return false }
        return lease.owner == owner && lease.expiresAt > LeaseManager.now()
    }

    public func release(_ id: String) {
        held.withLock { _ = $0.remove(id) }
        if read(layout.lease(id))?.owner == owner { try? Syscall.unlinkIfPresent(layout.lease(id)) }
    }

    /// Renews every held lease a few times per lease period; calls `lost` for a lease that
    /// someone else holds now.
    public func startKeeper(lost: @escaping @Sendable (String) -> Void) {
        NamedThread.start("leases") { [self] in
            while !stopRequested.load(ordering: .relaxed) {
                let interval = seconds / 3
                var slept = 0.0
                while slept < interval && !stopRequested.load(ordering: .relaxed) {
                    usleep(100_000)
                    slept += 0.1
                }
                for id in held.withLock({ $0 }) {
                    let path = layout.lease(id)
                    guard read(path)?.owner == owner else {
                        held.withLock { _ = $0.remove(id) }
                        logger.warning("lease lost to another daemon; discarding this attempt", id: id)
                        lost(id)
                        continue
                    }
                    try? DurableFile.replace(encode(expiresAt: LeaseManager.now() + seconds), at: path, mode: layout.fileMode)
                }
            }
            stopped.signal()
        }
    }

    public func stopKeeper() {
        stopRequested.store(true, ordering: .relaxed)
        stopped.wait()
    }

    enum Created {
        case created
        case exists
        case failed(String)
    }

    private func createExclusive(_ path: String, bytes: [UInt8]) -> Created {
        do {
            let fd = try Syscall.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: layout.fileMode)
            defer { Syscall.close(fd) }
            try Syscall.writeAll(fd, bytes, path: path)
            return .created
        } catch let error as SystemError where error.errno == EEXIST {
            return .exists
        } catch {
            return .failed("\(error)")
        }
    }

    /// The server stamps the lease's mtime; a local clock far from it makes leases unsafe.
    private func checkSkew(_ path: String) {
        guard !skewWarned.load(ordering: .relaxed), let info = try? Syscall.lstat(path) else { return }
        let serverTime = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        let skew = abs(serverTime - LeaseManager.now())
        if skew > margin / 2 && !skewWarned.exchange(true, ordering: .relaxed) {
            logger.warning("this machine's clock differs from the file server's; leases assume clocks within lease_seconds/3",
                           ["skew_seconds": String(format: "%.1f", skew), "lease_seconds": "\(seconds)"])
        }
    }
}
