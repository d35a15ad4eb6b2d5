import FoundationEssentials

/// What a start after a power loss repairs in the one-fsync order. Pure.
///
/// There a success is committed by its marked result, and the task record written after it
/// is not fsynced; the request's removal from `outgoing` is (its folder is fsynced last). A
/// power loss can therefore keep the result and the removal but lose the record, and no
/// restart decision would ever look at that id again: the request is gone. A kill leaves
/// the page cache, and with it every record, so only a start in another boot than the last
/// run's needs the repair: it looks at the results written since that run began and gives
/// each marked one the `done` record it proves.
public enum PowerLossRepair {
    /// What a run leaves in `state/.run` (`SpoolLayout.runMark`): the boot it ran in and
    /// when it began.
    public struct RunMark: Sendable, Equatable {
        static let version = "llmspool-run 1"
        /// The kernel's id of the boot (`/proc/sys/kernel/random/boot_id`).
        public var bootID: String
        /// Wall-clock start of the run, nanoseconds since 1970.
        public var startedNanoseconds: Int64

        public init(bootID: String, startedNanoseconds: Int64) {
            self.bootID = bootID
            self.startedNanoseconds = startedNanoseconds
        }

        /// The file's content.
        public func encoded() -> [UInt8] {
            Array("\(Self.version)\n\(bootID)\n\(startedNanoseconds)\n".utf8)
        }

        /// The mark in `bytes`, nil when they are not one (then the whole of `incoming` is
        /// looked at: see `scanSince`).
        public static func parse(_ bytes: [UInt8]) -> RunMark? {
            guard bytes.count <= 256 else { return nil }
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            guard lines.count >= 3, lines[0] == version, !lines[1].isEmpty, lines[1].allSatisfy({ $0.isHexDigit || $0 == "-" }),
                  let started = Int64(lines[2]), started >= 0 else { return nil }
            return RunMark(bootID: String(lines[1]), startedNanoseconds: started)
        }
    }

    /// What the previous run's mark says about this start.
    public enum Scan: Sendable, Equatable {
        /// The same boot: a kill at most, the records survived.
        case none
        /// Results modified at or after this time (nanoseconds since 1970) may lack their record.
        case since(Int64)
        /// The previous mark cannot be read: any result may.
        case everything
    }

    /// A file system's times are kept to a tick of the kernel's clock: a result of the run's
    /// first moment may carry a time a little before the mark's.
    static let slackNanoseconds: Int64 = 2_000_000_000

    /// `previous`: the mark found (`.absent` on a spool no run of this order has used yet,
    /// which has no marked results either); `bootID`: this boot's id, nil when unreadable.
    public static func scan(previous: PreviousRun, bootID: String?) -> Scan {
        switch previous {
        case .absent:
            return .none
        case .unreadable:
            return .everything
        case .found(let mark):
            if let bootID, bootID == mark.bootID { return .none }
            return .since(mark.startedNanoseconds > slackNanoseconds ? mark.startedNanoseconds - slackNanoseconds : 0)
        }
    }

    /// What `state/.run` held at start.
    public enum PreviousRun: Sendable, Equatable {
        case absent
        case unreadable
        case found(RunMark)
    }

    /// Whether a result modified at `modifiedNanoseconds` is one `scan` asks to look at.
    public static func covers(_ scan: Scan, modifiedNanoseconds: Int64) -> Bool {
        switch scan {
        case .none: return false
        case .everything: return true
        case .since(let start): return modifiedNanoseconds >= start
        }
    }

    /// The record to write for `incoming/<id>.json`, nil when there is nothing to repair.
    /// `record` and `recordModifiedNanoseconds` are what `state/<id>.json` holds now. A
    /// record of another request written after the result belongs to a later request of the
    /// same id, which the result does not answer: it is left alone. Otherwise the mark
    /// proves the request's end, and the record says so (`Recovery.restoredRecord`).
    public static func repairedRecord(id: String, record: TaskRecord?, recordModifiedNanoseconds: Int64?,
                                      resultInode: UInt64, resultModifiedNanoseconds: Int64, mark: ResultMark?, now: Date) -> TaskRecord? {
        guard let mark, mark.id == id else { return nil }
        if let record, let recorded = record.request, !recorded.isSameInstance(as: mark.request),
           let recordModified = recordModifiedNanoseconds, recordModified >= resultModifiedNanoseconds { return nil }
        return Recovery.restoredRecord(record: record, id: id, identity: mark.request, resultInode: resultInode, resultMark: mark, now: now)
    }
}
