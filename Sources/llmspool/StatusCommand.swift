import Foundation
import Glibc
import LLMSpoolCore

/// `llmspool status` and `llmspool show`: read the spool, change nothing.
enum StatusCommand {
    static func status(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued.union(["--interval"]), switches: ["--help", "--json", "--watch", "--list"])
        if args.has("--help") {
            print(Help.status)
            return 0
        }
        if args.has("--list") {
            // The same listing as `queue`, for those who look for it under status.
            guard !args.has("--watch") && args["--interval"] == nil else { throw Arguments.UsageError(description: "--list does not take --watch") }
            return try queue(argv.filter { $0 != "--list" })
        }
        guard args.positionals.isEmpty else { throw Arguments.UsageError(description: "unexpected argument \(Logger.escape(args.positionals[0]))") }
        var interval = 1.0
        if let text = args["--interval"] {
            guard let seconds = Double(text), seconds >= 0.1, seconds <= 86_400 else {
                throw Arguments.UsageError(description: "--interval takes seconds from 0.1 to 86400, not \"\(Logger.escape(text))\"")
            }
            guard args.has("--watch") else { throw Arguments.UsageError(description: "--interval applies to --watch only") }
            interval = seconds
        }
        let layout = try ClientSpool.existing(args)
        let query = SpoolQuery(layout: layout)
        let clear = args.has("--watch") && !args.has("--json") && isatty(1) == 1
        repeat {
            // Watching, the spool may go (rm -rf, an unmount): said so, not shown as zeros.
            // A running daemon makes its folders again, and the next report is the spool's.
            guard Syscall.isPresent(layout.outgoing) else {
                FileHandle.standardError.write(Data("llmspool: status: \(layout.outgoing) does not exist now\n".utf8))
                Thread.sleep(forTimeInterval: interval)
                continue
            }
            // Each report: a folder made unreadable while watching would read as an empty spool.
            do {
                try ClientSpool.checkReadable(layout)
            } catch let error where args.has("--watch") {
                FileHandle.standardError.write(Data("llmspool: status: \(error)\n".utf8))
                Thread.sleep(forTimeInterval: interval)
                continue
            }
            let summary = query.summary()
            let batches = summary.batches
            // No daemon reports (none runs, or it is stopped): the batches are counted from
            // their journals, without what is in flight.
            let counted = summary.daemonPID == nil ? BatchQuery(layout: layout).fromJournals() : []
            let owed = summary.daemonPID == nil ? BatchQuery(layout: layout).endsOwed() : []
            var text: String
            if args.has("--json") {
                // Watching prints one compact object per line (NDJSON) for scripts to read as it comes.
                let bytes = args.has("--watch") ? summary.jsonLine() : summary.json()
                if var object = JSONObject.parse(bytes) {
                    // One of the two is empty: the daemon's counts, or the journals' without one.
                    object["batches"] = batches.compactMap { JSONObject.parse($0.json()) } + counted.map { batch in
                        var item = batch.progress.flatMap { JSONObject.parse($0.json()) } ?? ["name": batch.name, "begun": false]
                        item["from_journal"] = true
                        return item
                    } + owed.map { ["name": $0, "from_journal": true, "input_gone": true] }
                    let options: JSONSerialization.WritingOptions = args.has("--watch") ? [.sortedKeys] : [.prettyPrinted, .sortedKeys]
                    text = String(decoding: try JSONSerialization.data(withJSONObject: object, options: options), as: UTF8.self) + "\n"
                } else {
                    text = String(decoding: bytes, as: UTF8.self)
                }
            } else {
                text = summary.text() + "\n"
                if !batches.isEmpty {
                    text += "batches running:\n" + batches.map { "  " + $0.line() + "\n" }.joined()
                }
                if !counted.isEmpty {
                    text += "batches in outgoing (no daemon reporting; counts from their journals):\n"
                    text += counted.map { batch in
                        "  " + (batch.progress.map { "\(Logger.escape($0.name)): \($0.done)/\($0.total) done (\($0.failed) failed)" }
                                ?? "\(Logger.escape(batch.name)): not begun") + "\n"
                    }.joined()
                }
                if !owed.isEmpty {
                    text += "batches whose input left, their end not published yet (a daemon ends them once it runs and can write):\n"
                    text += owed.map { "  \(Logger.escape($0))\n" }.joined()
                }
            }
            if clear { FileHandle.standardOutput.write(Data("\u{1B}[H\u{1B}[2J".utf8)) }
            FileHandle.standardOutput.write(Data(text.utf8))
            // Thread.sleep: usleep takes a UInt32 of microseconds, which a long interval overflows.
            if args.has("--watch") { Thread.sleep(forTimeInterval: interval) }
        } while args.has("--watch")
        return 0
    }

    static func queue(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued, switches: ["--help", "--json"])
        if args.has("--help") {
            print(Help.queue)
            return 0
        }
        guard args.positionals.isEmpty else { throw Arguments.UsageError(description: "unexpected argument \(Logger.escape(args.positionals[0]))") }
        let entries = SpoolQuery(layout: try ClientSpool.readable(args)).queue()
        if args.has("--json") {
            FileHandle.standardOutput.write(Data(QueueEntry.json(entries)))
        } else {
            FileHandle.standardOutput.write(Data(QueueEntry.table(entries).utf8))
        }
        return 0
    }

    static func show(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued, switches: ["--help"])
        if args.has("--help") {
            print(Help.show)
            return 0
        }
        guard args.positionals.count == 1 else { throw Arguments.UsageError(description: "give one request ID") }
        let layout = try ClientSpool.layout(args)
        try ClientSpool.checkReadable(layout)
        let name = try ClientSpool.name(args.positionals[0])
        // A file `queue` lists by its name, left in outgoing because that name cannot be used.
        if let details = SpoolQuery(layout: layout).showUnusable(fileName: name) {
            let data = try JSONSerialization.data(withJSONObject: details, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
            return 0
        }
        let batchName = name.hasSuffix(SpoolLayout.batchSuffix) ? String(name.dropLast(SpoolLayout.batchSuffix.count)) : name
        let batches = BatchQuery(layout: layout)
        if name.hasSuffix(SpoolLayout.batchSuffix) || batches.isBatch(batchName) {
            let details = batches.show(batchName)
            let data = try JSONSerialization.data(withJSONObject: details, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
            return details["state"] as? String == "unknown" ? 1 : 0
        }
        let details = SpoolQuery(layout: layout).show(name)
        let data = try JSONSerialization.data(withJSONObject: details, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
        guard details["state"] as? String != RequestState.unknown.rawValue else {
            // The object stays on stdout for scripts; a person is told what was not found.
            FileHandle.standardError.write(Data("llmspool: show: no request \(Logger.escape(name)) in \(layout.root) (not in outgoing, hold, incoming or failed)\n".utf8))
            return 1
        }
        return 0
    }
}
