import Foundation
import LLMSpoolCore

/// `llmspool retry`, `cancel` and `clean`: an operator's changes to the spool.
enum ManageCommand {
    static func retry(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool"], switches: ["--help", "--all-failed"])
        if args.has("--help") {
            print(Help.retry)
            return 0
        }
        let actions = SpoolActions(layout: SpoolLayout(root: args["--spool"] ?? "./spool"))
        let ids = args.has("--all-failed") ? actions.failedIDs() : args.positionals
        guard !ids.isEmpty else {
            if args.has("--all-failed") { return 0 }
            throw Arguments.UsageError(description: "give request IDs, or --all-failed")
        }
        return each(ids, "requeued") { try actions.retry($0) }
    }

    static func cancel(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool"], switches: ["--help"])
        if args.has("--help") {
            print(Help.cancel)
            return 0
        }
        guard !args.positionals.isEmpty else { throw Arguments.UsageError(description: "give request IDs") }
        let actions = SpoolActions(layout: SpoolLayout(root: args["--spool"] ?? "./spool"))
        return each(args.positionals, "cancelled") { try actions.cancel($0) }
    }

    static func clean(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool", "--older-than"], switches: ["--help"])
        if args.has("--help") {
            print(Help.clean)
            return 0
        }
        guard let text = args["--older-than"], let age = SpoolActions.age(text) else {
            throw Arguments.UsageError(description: "--older-than takes an age such as 90s, 15m, 12h, 7d or 2w")
        }
        let cleaned = try SpoolActions(layout: SpoolLayout(root: args["--spool"] ?? "./spool")).clean(olderThan: Date().addingTimeInterval(-age))
        print("removed \(cleaned.results) results, \(cleaned.failures) failed requests, \(cleaned.records) task records")
        return 0
    }

    /// Runs `body` for each id; reports each failure and keeps going. Exit 1 if any failed.
    static func each(_ ids: [String], _ verb: String, _ body: (String) throws -> Void) -> Int32 {
        var status: Int32 = 0
        for id in ids {
            do {
                try body(id)
                print("\(verb) \(id)")
            } catch {
                FileHandle.standardError.write(Data("llmspool: \(error)\n".utf8))
                status = 1
            }
        }
        return status
    }
}
