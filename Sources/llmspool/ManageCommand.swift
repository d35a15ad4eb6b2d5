import Foundation
import Glibc
import LLMSpoolCore

/// `llmspool retry`, `cancel` and `clean`: an operator's changes to the spool.
enum ManageCommand {
    static func retry(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued, switches: ["--help", "--all-failed", "--all"])
        if args.has("--help") {
            print(Help.retry)
            return 0
        }
        let modes = ["--all-failed", "--all"].filter(args.has)
        if modes.count > 1 { throw Arguments.UsageError(description: "give --all or --all-failed, not both") }
        if let mode = modes.first, !args.positionals.isEmpty {
            throw Arguments.UsageError(description: "give request IDs or \(mode), not both")
        }
        guard !modes.isEmpty || !args.positionals.isEmpty else {
            throw Arguments.UsageError(description: "give request IDs, --all or --all-failed")
        }
        let layout = try ClientSpool.existing(args)
        let actions = SpoolActions(layout: layout)
        if args.has("--all") {
            try ClientSpool.changing(layout) { try actions.sendNow(nil) }
            print("asked the daemon to send every waiting request now")
            warnIfNoDaemon(layout)
            return 0
        }
        guard args.has("--all-failed") else {
            var asked = false
            let status = each(args.positionals, nil, in: layout) { id in
                // A prompt file waits in outgoing under its own ending, not only .json.
                if Syscall.isPresent(layout.failedRequest(id)) || SpoolQuery(layout: layout).requestPath(of: id) == nil {
                    try actions.retry(id)
                    print("requeued \(id)")
                } else {
                    try actions.sendNow(id)
                    print("asked the daemon to send \(id) now")
                    asked = true
                }
            }
            if asked { warnIfNoDaemon(layout) }
            return status
        }
        // A failure that a later result of the same id replaced is history: archived, not sent again.
        let superseded = Set(actions.supersededIDs())
        let archived = each(superseded.sorted(), "archived superseded failure of", in: layout) { try actions.archive($0) }
        let retried = each(actions.failedIDs().filter { !superseded.contains($0) }, "requeued", in: layout) { try actions.retry($0) }
        return max(archived, retried)
    }

    /// A send-now request waits for a daemon: say so when none is running on the spool.
    static func warnIfNoDaemon(_ layout: SpoolLayout) {
        guard LiveStatus.read(layout, now: Date()) == nil else { return }
        FileHandle.standardError.write(Data("llmspool: warning: no daemon is running on \(layout.root); the request goes when one starts\n".utf8))
    }

    static func cancel(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued, switches: ["--help", "--all", "--yes"])
        if args.has("--help") {
            print(Help.cancel)
            return 0
        }
        if args.has("--all") && !args.positionals.isEmpty { throw Arguments.UsageError(description: "give request IDs or --all, not both") }
        guard args.has("--all") || !args.positionals.isEmpty else { throw Arguments.UsageError(description: "give request IDs, or --all") }
        if args.has("--yes") && !args.has("--all") { throw Arguments.UsageError(description: "--yes applies to --all only") }
        let layout = try ClientSpool.existing(args)
        let actions = SpoolActions(layout: layout)
        guard args.has("--all") else { return each(args.positionals, nil, in: layout) { report(try actions.cancel($0), layout) } }
        let ids = SpoolQuery(layout: layout).outgoingIDs().sorted()
        guard !ids.isEmpty else {
            print("nothing to cancel in \(layout.outgoing)")
            return 0
        }
        if !args.has("--yes") {
            guard confirm("cancel \(ids.count == 1 ? "the 1 request" : "all \(ids.count) requests") in \(layout.outgoing)? [y/N] ") else {
                FileHandle.standardError.write(Data("llmspool: nothing cancelled\n".utf8))
                return 1
            }
        }
        return each(ids, nil, in: layout) { report(try actions.cancel($0), layout) }
    }

    /// What `cancel` did, on stdout; a batch of the same name as a cancelled request is named
    /// on stderr, since the request went first.
    static func report(_ cancelled: SpoolActions.Cancelled, _ layout: SpoolLayout) {
        switch cancelled {
        case .request(let id), .held(let id):
            print("cancelled \(id)")
            if CancelTarget.candidates(of: id).contains(.batch(name: id)), Syscall.isPresent(layout.batchRequest(id)) {
                FileHandle.standardError.write(Data("llmspool: the batch \(layout.batchRequest(id)) is not cancelled; cancel \(id)\(SpoolLayout.batchSuffix) cancels it\n".utf8))
            }
        case .batch(let name, let begun):
            if begun {
                print("cancelled batch \(name): its finished lines stay, the others end batch_cancelled in \(layout.batchOutput(name))")
            } else {
                print("cancelled batch \(name): it had not started when cancelled, and leaves no output")
            }
        }
    }

    /// Asks on the terminal (stderr, then a line from stdin); anything but y or yes is no,
    /// and so is the end of the input, so a script without --yes cancels nothing.
    static func confirm(_ question: String) -> Bool {
        FileHandle.standardError.write(Data(question.utf8))
        guard let answer = readLine() else {
            FileHandle.standardError.write(Data("\n".utf8))
            return false
        }
        return ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
    }

    /// `hold ID...` and `release ID...`, like postsuper -h and -H.
    static func hold(_ argv: [String], release: Bool) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued, switches: ["--help"])
        if args.has("--help") {
            print(Help.hold)
            return 0
        }
        guard !args.positionals.isEmpty else { throw Arguments.UsageError(description: "give request IDs") }
        let layout = try ClientSpool.existing(args)
        let actions = SpoolActions(layout: layout)
        return release ? each(args.positionals, "released", in: layout) { try actions.release($0) }
            : each(args.positionals, "held", in: layout) { try actions.hold($0) }
    }

    static func clean(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued.union(["--older-than"]), switches: ["--help"])
        if args.has("--help") {
            print(Help.clean)
            return 0
        }
        guard args.positionals.isEmpty else { throw Arguments.UsageError(description: "unexpected argument \(Logger.escape(args.positionals[0]))") }
        guard let text = args["--older-than"], let age = SpoolActions.age(text) else {
            throw Arguments.UsageError(description: "--older-than takes an age such as 90s, 15m, 12h, 7d or 2w")
        }
        let cleaned = try SpoolActions(layout: try ClientSpool.existing(args)).clean(olderThan: Date().addingTimeInterval(-age))
        print("removed \(cleaned.results) results, \(cleaned.failures) failed requests, \(cleaned.records) task records, \(cleaned.batches) batches")
        for problem in cleaned.problems { FileHandle.standardError.write(Data("llmspool: clean: kept, cannot be removed: \(problem)\n".utf8)) }
        return cleaned.problems.isEmpty ? 0 : 1
    }

    /// Runs `body` for each id; reports each failure and keeps going. Exit 1 if any failed.
    /// Runs `body` for each id, printing "`verb` ID" after each success (nothing when
    /// `verb` is nil: the body says what it did); an error is printed and the rest go on.
    static func each(_ ids: [String], _ verb: String?, in layout: SpoolLayout, _ body: (String) throws -> Void) -> Int32 {
        var status: Int32 = 0
        for id in ids {
            do {
                try ClientSpool.changing(layout) { try body(id) }
                if let verb { print("\(verb) \(id)") }
            } catch {
                FileHandle.standardError.write(Data("llmspool: \(error)\n".utf8))
                status = 1
            }
        }
        return status
    }
}
