import Foundation
import Glibc

/// The start-up pass of the one-fsync order that gives back the task records a power loss
/// took (`PowerLossRepair`), then leaves this run's mark in `state/.run`. Runs before the
/// watcher, on the starting thread: after a reboot it reads the results of the previous
/// run only, by their modification time.
enum PowerLossScan {
    /// The kernel's id of this boot; nil where `/proc` does not say (every start then looks).
    static let bootIDPath = "/proc/sys/kernel/random/boot_id"

    /// How many records were written again.
    @discardableResult
    static func run(layout: SpoolLayout, logger: Logger, now: Date = Date()) throws -> Int {
        let bootID = readBootID(logger: logger)
        let scan = PowerLossRepair.scan(previous: previousRun(layout: layout, logger: logger), bootID: bootID)
        var repaired = 0
        if scan != .none {
            repaired = try repairRecords(layout: layout, scan: scan, logger: logger, now: now)
            if repaired > 0 {
                logger.warning("the machine stopped without writing some task records; they were written again from their results",
                               ["records": "\(repaired)"])
            }
        }
        // Durable before this run commits anything: the next start must know where it began.
        let started = Int64(now.timeIntervalSince1970 * 1_000_000_000)
        let mark = PowerLossRepair.RunMark(bootID: bootID ?? "unknown", startedNanoseconds: started)
        try DurableFile.write(mark.encoded(), to: layout.runMark, mode: layout.fileMode)
        return repaired
    }

    static func readBootID(logger: Logger) -> String? {
        do {
            let text = String(decoding: try FileReader.prefix(path: bootIDPath, limit: 128), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? nil : text
        } catch {
            logger.debug("no boot id; results are looked at on every start", ["reason": "\(error)"])
            return nil
        }
    }

    static func previousRun(layout: SpoolLayout, logger: Logger) -> PowerLossRepair.PreviousRun {
        let bytes: [UInt8]
        do {
            bytes = try FileReader.prefix(path: layout.runMark, limit: 256)
        } catch let error as SystemError where error.errno == ENOENT {
            return .absent
        } catch {
            logger.warning("cannot read the previous run's mark; every result is looked at", ["path": LogValue(layout.runMark), "reason": "\(error)"])
            return .unreadable
        }
        guard let mark = PowerLossRepair.RunMark.parse(bytes) else {
            logger.warning("the previous run's mark is unusable; every result is looked at", ["path": LogValue(layout.runMark)])
            return .unreadable
        }
        return .found(mark)
    }

    static func repairRecords(layout: SpoolLayout, scan: PowerLossRepair.Scan, logger: Logger, now: Date) throws -> Int {
        var repaired = 0
        for name in try Syscall.listDirectory(layout.incoming) {
            guard let id = resultID(name) else { continue }
            let path = layout.result(id)
            let result: stat
            do {
                result = try Syscall.lstat(path)
            } catch let error as SystemError where error.errno == ENOENT {
                continue
            }
            guard result.st_mode & S_IFMT == S_IFREG,
                  PowerLossRepair.covers(scan, modifiedNanoseconds: nanoseconds(result.st_mtim)) else { continue }
            guard let mark = ResultMarkReader.read(path, id: id, logger: logger) else { continue }
            let record: TaskRecord?
            switch TaskRecord.lookUp(layout, id: id) {
            case .none: record = nil
            case .found(let found): record = found
            case .unreadable(let reason):
                // A record cut short by the power loss is what this pass is for.
                logger.info("the task record cannot be read; the result's mark stands for it", id: id, ["reason": LogValue(reason)])
                record = nil
            }
            let recordModified: Int64?
            do {
                recordModified = nanoseconds(try Syscall.lstat(layout.taskRecord(id)).st_mtim)
            } catch let error as SystemError where error.errno == ENOENT {
                recordModified = nil
            }
            guard let repairedRecord = PowerLossRepair.repairedRecord(
                id: id, record: record, recordModifiedNanoseconds: recordModified, resultInode: UInt64(result.st_ino),
                resultModifiedNanoseconds: nanoseconds(result.st_mtim), mark: mark, now: now) else { continue }
            try repairedRecord.write(layout, durable: true)
            logger.info("the task record was written again from its result's mark", id: id)
            repaired += 1
        }
        return repaired
    }

    /// The id of a name that may be a result: `<id>.json` with an id a request can have.
    static func resultID(_ name: String) -> String? {
        guard name.hasSuffix(SpoolLayout.requestSuffix), case .request(let id) = RequestName.classify(name) else { return nil }
        return id
    }

    static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }
}
