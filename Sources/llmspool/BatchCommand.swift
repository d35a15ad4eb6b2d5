import Foundation
import Glibc
import LLMSpoolCore

/// `llmspool submit FILE.jsonl`: drops a batch file and, with `--wait`, follows it to its end.
enum BatchCommand {
    /// Exit status: 0 every line succeeded, 2 some did not, 1 the batch was refused (or
    /// vanished), 124 the timeout passed.
    static func submit(_ source: String, name: String?, wait: Bool, timeout: Double?, layout: SpoolLayout) throws -> Int32 {
        let name = name ?? BatchSubmitter.name(ofPath: source)
        try BatchSubmitter.submit(from: source, name: name, layout: layout, mode: SubmitCommand.requestMode(layout))
        if let warning = ClientSpool.idleWarning(layout) { FileHandle.standardError.write(Data("llmspool: \(warning)\n".utf8)) }
        guard wait else {
            print(name)
            return 0
        }
        return follow(name, layout: layout, timeout: timeout)
    }

    static func follow(_ name: String, layout: SpoolLayout, timeout: Double?) -> Int32 {
        let query = BatchQuery(layout: layout)
        let live = isatty(2) == 1
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var lastShown = ""
        var lastLineAt = Date.distantPast
        while true {
            switch query.state(of: name) {
            case .ended(let summary, _):
                if live { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                let counts = summary["request_counts"] as? [String: Any] ?? [:]
                let failed = counts["failed"] as? Int ?? 0
                FileHandle.standardError.write(Data("llmspool: batch \(name) \(summary["status"] as? String ?? "ended"): \(counts["completed"] as? Int ?? 0) of \(counts["total"] as? Int ?? 0) succeeded, \(failed) failed\n".utf8))
                // An output lost (removed before it was published): no path to print.
                guard summary["output_file_id"] is String else {
                    let errors = (summary["errors"] as? [String: Any])?["data"] as? [[String: Any]]
                    let message = errors?.first?["message"] as? String ?? "the batch has no output"
                    FileHandle.standardError.write(Data("llmspool: batch \(name): \(Logger.escape(message)) (\(layout.batchSummary(name)))\n".utf8))
                    return 1
                }
                print(layout.batchOutput(name))
                return failed == 0 && summary["status"] as? String == "completed" ? 0 : 2
            case .refused(let record, let path):
                if live { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                FileHandle.standardError.write(Data("llmspool: batch \(name) refused: \(record["message"] as? String ?? "invalid") (\(path))\n".utf8))
                return 1
            case .running(let progress):
                let text = progress?.line() ?? "\(name): waiting for the daemon"
                if live {
                    if text != lastShown { FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8)) }
                } else if text != lastShown && Date().timeIntervalSince(lastLineAt) >= 5 {
                    FileHandle.standardError.write(Data("\(text)\n".utf8))
                    lastLineAt = Date()
                }
                lastShown = text
            case .unknown:
                // Between the input's removal and the summary's rename nothing is visible for
                // an instant: looked at again before giving up.
                usleep(200_000)
                if query.state(of: name) == .unknown {
                    FileHandle.standardError.write(Data("llmspool: batch \(name) left outgoing without a summary\n".utf8))
                    return 1
                }
            }
            if let deadline, Date() >= deadline {
                if live { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                FileHandle.standardError.write(Data("llmspool: gave up waiting for batch \(name); it is still in the spool\n".utf8))
                return 124
            }
            usleep(250_000)
        }
    }
}
