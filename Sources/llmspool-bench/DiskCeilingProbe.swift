import Foundation
import Glibc
import LLMSpoolCore
import Synchronization

/// What the disk itself allows for P1's durable results: `count` small files created,
/// written, fsynced and renamed by as many threads as the daemon's finisher has, with one
/// folder fsync per batch, on the filesystem of the spool. A batch is what the daemon's
/// group commit takes: a thread that fsyncs the folder once for every file renamed since
/// its last fsync (at most `GroupCommitter.batchLimit`), while the writers go on.
enum DiskCeilingProbe {
    struct Run {
        var seconds: Double
        var folderSyncs: Int
    }

    static func run(folder: String, count: Int, bytes: Int, threads: Int, batchLimit: Int) throws -> Run {
        try Syscall.mkdir(folder, mode: 0o700)
        let payload = [UInt8](repeating: 0x61, count: max(1, bytes))
        let shared = Shared()
        let ready = DispatchSemaphore(value: 0)
        let start = Date()
        var writers: [Thread] = []
        let finished = DispatchGroup()
        for _ in 0..<threads {
            finished.enter()
            let thread = Thread {
                defer { finished.leave() }
                while true {
                    let index = shared.next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < count else { return }
                    let path = "\(folder)/r\(index).json"
                    let temporary = "\(folder)/.r\(index).json.tmp"
                    do {
                        let file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
                        try file.writeAll(payload)
                        try file.fsync()
                        try file.close()
                        try Syscall.rename(temporary, path)
                    } catch {
                        shared.state.withLock { $0.failure = "\(error)"; $0.renamed += 1 }
                        ready.signal()
                        return
                    }
                    shared.state.withLock { $0.renamed += 1 }
                    ready.signal()
                }
            }
            writers.append(thread)
            thread.start()
        }
        // The committer: whatever was renamed when it wakes is made durable by one fsync.
        var failure: String?
        while true {
            ready.wait()
            let (pending, done) = shared.state.withLock { state -> (Int, Bool) in
                (min(state.renamed - state.synced, batchLimit), state.synced >= count)
            }
            if done { break }
            guard pending > 0 else { continue }
            do {
                try Syscall.fsyncDirectory(folder)
            } catch {
                failure = "\(error)"
                break
            }
            let complete = shared.state.withLock { state -> Bool in
                state.synced += pending
                state.syncs += 1
                return state.synced >= count
            }
            // The semaphore counts renames, not batches: drain what this batch covered.
            for _ in 1..<pending { ready.wait() }
            if complete { break }
        }
        finished.wait()
        let seconds = Date().timeIntervalSince(start)
        let (syncs, writeFailure) = shared.state.withLock { ($0.syncs, $0.failure) }
        if let problem = writeFailure ?? failure { throw ConfigError("the disk-ceiling probe in \(folder) failed: \(problem)") }
        return Run(seconds: seconds, folderSyncs: syncs)
    }

    /// What the writers and the committer share.
    final class Shared: Sendable {
        /// Files renamed, and those a folder fsync covered; the error that stopped a writer.
        let state = Mutex((renamed: 0, synced: 0, syncs: 0, failure: String?.none))
        let next = Atomic<Int>(0)
    }

    /// The one-minute load average, from /proc/loadavg: the machine is shared.
    static func loadAverage() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return -1 }
        return Double(text.split(separator: " ").first ?? "") ?? -1
    }
}
