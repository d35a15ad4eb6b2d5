import Foundation
import Glibc
import LLMSpoolCore

/// `llmspool status` and `llmspool show`: read the spool, change nothing.
enum StatusCommand {
    static func status(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool", "--interval"], switches: ["--help", "--json", "--watch"])
        if args.has("--help") {
            print(Help.status)
            return 0
        }
        let layout = SpoolLayout(root: args["--spool"] ?? "./spool")
        guard Syscall.isPresent(layout.outgoing) else { throw ConfigError("\(layout.outgoing) does not exist; is --spool right?") }
        let query = SpoolQuery(layout: layout)
        let interval = Double(args["--interval"] ?? "1") ?? 1
        repeat {
            let summary = query.summary()
            let text = args.has("--json") ? String(decoding: summary.json(), as: UTF8.self) : summary.text() + "\n"
            if args.has("--watch") && isatty(1) == 1 {
                FileHandle.standardOutput.write(Data("\u{1B}[H\u{1B}[2J".utf8))
            }
            FileHandle.standardOutput.write(Data(text.utf8))
            if args.has("--watch") { usleep(UInt32(max(0.1, interval) * 1_000_000)) }
        } while args.has("--watch")
        return 0
    }

    static func show(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool"], switches: ["--help"])
        if args.has("--help") {
            print(Help.show)
            return 0
        }
        guard args.positionals.count == 1 else { throw Arguments.UsageError(description: "give one request ID") }
        let layout = SpoolLayout(root: args["--spool"] ?? "./spool")
        let details = SpoolQuery(layout: layout).show(args.positionals[0])
        let data = try JSONSerialization.data(withJSONObject: details, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
        return details["state"] as? String == RequestState.unknown.rawValue ? 1 : 0
    }
}
