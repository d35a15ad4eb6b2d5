import Foundation
import Glibc

/// `state/daemons/<host>.<pid>.json`: one file per daemon on a shared spool, rewritten
/// about once a second, so that `status` on any machine shows every live daemon (the
/// single `state/.daemon.json` shows only the last one to write, and its pid means
/// nothing on another host).
public enum DaemonRoster {
    /// One daemon's line in `status`.
    public struct Entry: Sendable, Equatable {
        public var host: String
        public var pid: Int32
        public var updatedAt: Date
        public var queued: Int
        public var deferred: Int
        public var inFlight: Int

        public init(host: String, pid: Int32, updatedAt: Date, queued: Int, deferred: Int, inFlight: Int) {
            self.host = host
            self.pid = pid
            self.updatedAt = updatedAt
            self.queued = queued
            self.deferred = deferred
            self.inFlight = inFlight
        }

        public func encoded() -> [UInt8] {
            JSONObject.encode(["host": host, "pid": Int(pid), "updated_at": Timestamp.string(updatedAt), "queued": queued, "deferred": deferred,
                               "in_flight": inFlight] as [String: Any])
        }

        public static func parse(_ bytes: [UInt8]) -> Entry? {
            guard let object = JSONObject.parse(bytes), let host = object["host"] as? String,
                  let pid = (object["pid"] as? NSNumber)?.int32Value,
                  let updated = (object["updated_at"] as? String).flatMap(Timestamp.date) else { return nil }
            return Entry(host: host, pid: pid, updatedAt: updated, queued: object["queued"] as? Int ?? 0,
                         deferred: object["deferred"] as? Int ?? 0, inFlight: object["in_flight"] as? Int ?? 0)
        }
    }

    public static func folder(_ layout: SpoolLayout) -> String { layout.daemons }

    /// The host id made safe for a file name: anything but letters, digits, `-`, `_` and
    /// `.` becomes `_` (the host itself is in the file).
    public static func path(_ layout: SpoolLayout, host: String, pid: Int32) -> String {
        let safe = String(host.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "-_.".unicodeScalars.contains(scalar)) ? Character(scalar) : "_"
        })
        return "\(folder(layout))/\(safe.isEmpty ? "_" : safe).\(pid).json"
    }

    /// The pid in a roster file's name (`<host>.<pid>.json`, or its temporary
    /// `.<host>.<pid>.json.tmp`) when the file is this host's; nil for anything else.
    public static func pid(inName name: String, safeHost: String) -> Int32? {
        var stem = Substring(name)
        if stem.hasPrefix(SpoolLayout.hiddenPrefix) && stem.hasSuffix(SpoolLayout.temporarySuffix) {
            stem = stem.dropFirst(SpoolLayout.hiddenPrefix.count).dropLast(SpoolLayout.temporarySuffix.count)
        }
        guard stem.hasSuffix(".json") else { return nil }
        stem = stem.dropLast(".json".count)
        guard let dot = stem.lastIndex(of: "."), stem[..<dot] == safeHost, let pid = Int32(stem[stem.index(after: dot)...]), pid > 0 else { return nil }
        return pid
    }

    /// Removes what earlier runs of this host left in the roster (an entry, or the temporary
    /// of one killed mid-write): their pid is gone. Another host's files are its own.
    public static func removeDeadIncarnations(_ layout: SpoolLayout, host: String, myPID: Int32, logger: Logger,
                                              isAlive: (Int32) -> Bool = { kill($0, 0) == 0 || errno == EPERM }) {
        let mine = (path(layout, host: host, pid: 1) as NSString).lastPathComponent
        let safeHost = String(mine.dropLast(".1.json".count))
        let names: [String]
        do {
            names = try Syscall.listDirectory(folder(layout))
        } catch let error as SystemError where error.errno == ENOENT {
            return
        } catch {
            logger.warning("cannot read the roster of daemons", ["path": LogValue(folder(layout)), "reason": "\(error)"])
            return
        }
        for name in names {
            guard let pid = pid(inName: name, safeHost: safeHost), pid != myPID, !isAlive(pid) else { continue }
            logger.bestEffort("removing a leftover") { try Syscall.unlinkIfPresent("\(folder(layout))/\(name)") }
        }
    }

    /// Whether an entry is a live daemon: rewritten lately, and, when it is of this host,
    /// its process exists (another host's pid cannot be checked from here).
    public static func isLive(_ entry: Entry, now: Date, localHost: String, isAlive: (Int32) -> Bool) -> Bool {
        guard now.timeIntervalSince(entry.updatedAt) < LiveStatus.staleAfterSeconds else { return false }
        return entry.host != localHost || isAlive(entry.pid)
    }

    /// Every live daemon's entry, by host and pid.
    public static func read(_ layout: SpoolLayout, now: Date = Date(), localHost: String? = nil) -> [Entry] {
        let local = localHost ?? ProcessInfo.processInfo.hostName
        // No roster folder: no daemon; an entry gone while listed: that daemon stopped.
        let entries = ((try? Syscall.listDirectory(folder(layout))) ?? []).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.compactMap { name in
            (try? FileReader.prefix(path: "\(folder(layout))/\(name)", limit: 64 << 10)).flatMap(Entry.parse)
        }
        return entries.filter { isLive($0, now: now, localHost: local, isAlive: { kill($0, 0) == 0 || errno == EPERM }) }
            .sorted { ($0.host, $0.pid) < ($1.host, $1.pid) }
    }
}
