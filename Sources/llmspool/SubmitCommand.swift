import Foundation
import Glibc
import LLMSpoolCore

/// `llmspool submit` and `llmspool wait`: drop a request safely, and follow one to its end.
enum SubmitCommand {
    static func submit(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued.union(["--id", "--timeout"]), switches: ["--help", "--wait", "--progress"])
        if args.has("--help") {
            print(Help.submit)
            return 0
        }
        // Every argument is checked before anything is dropped: a typo must not cost a request.
        guard args.positionals.count == 1 else { throw Arguments.UsageError(description: "give one FILE, or - for standard input") }
        let waitTimeout = try timeout(args)
        if args["--timeout"] != nil && !args.has("--wait") {
            throw Arguments.UsageError(description: "--timeout applies to --wait only")
        }
        if args.has("--progress") && !args.has("--wait") {
            throw Arguments.UsageError(description: "--progress applies to --wait only")
        }
        if args.positionals[0].hasSuffix(SpoolLayout.batchSuffix) {
            return try BatchCommand.submit(args.positionals[0], name: args["--id"], wait: args.has("--wait"), timeout: waitTimeout,
                                           layout: try ClientSpool.existing(args))
        }
        let id = args["--id"] ?? newID()
        guard case .request(let parsed) = RequestName.classify(id + SpoolLayout.requestSuffix), parsed == id, !id.contains("/") else {
            throw Arguments.UsageError(description: "--id \"\(Logger.escape(id))\" cannot be used as a request id")
        }
        let source = args.positionals[0]
        let layout = try ClientSpool.existing(args)
        let limit = Config().maxRequestBytes
        let bytes: [UInt8]
        if source == "-" {
            bytes = Array(FileHandle.standardInput.readDataToEndOfFile().prefix(limit + 1))
        } else {
            // The user's own file, outside the spool: a link to it is followed.
            do { bytes = try FileReader.prefix(path: source, limit: limit + 1, followingLinks: true) } catch { throw ConfigError("cannot read \(source): \(error)") }
        }
        guard bytes.count <= limit else { throw ConfigError("\(source) is larger than \(limit) bytes") }
        // A prompt file keeps its ending, which is its format; anything else is a JSON request.
        let suffix = RequestName.format(of: source).map(\.suffix) ?? SpoolLayout.requestSuffix
        return try drop(bytes, id: id, suffix: suffix, source: source == "-" ? "standard input" : source, layout: layout,
                        wait: args.has("--wait"), timeout: waitTimeout, progress: ProgressMode(forced: args.has("--progress")))
    }

    /// Drops a checked request and prints its id, or follows it with `wait`.
    static func drop(_ bytes: [UInt8], id: String, suffix: String, source: String, layout: SpoolLayout, wait: Bool, timeout waitTimeout: Double?,
                     progress: ProgressMode) throws -> Int32 {
        if let existing = SpoolQuery(layout: layout).requestPath(of: id) { throw ConfigError("a request with id \(id) is already queued (\(existing))") }
        do {
            try Submitter.submit(bytes, id: id, layout: layout, mode: requestMode(layout), suffix: suffix)
        } catch let problem as RequestProblem {
            throw ConfigError("\(source): \(problem)")
        }
        if let warning = ClientSpool.idleWarning(layout) { FileHandle.standardError.write(Data("llmspool: \(warning)\n".utf8)) }
        guard wait else {
            print(id)
            return 0
        }
        // Ready for Ctrl-C before the id is out: whoever reads the id may interrupt at once.
        let interrupt = interruptMessage(id, clearLine: progress == .terminal)
        FileHandle.standardError.write(Data("\(id)\n".utf8))
        return follow(id, layout: layout, timeout: waitTimeout, progress: progress, interrupt: interrupt)
    }

    /// `llmspool ask "question"`: writes a prompt file for the question and drops it.
    static func ask(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued.union(["--id", "--timeout", "--model", "--system"]), switches: ["--help", "--wait", "--progress"])
        if args.has("--help") {
            print(Help.ask)
            return 0
        }
        guard args.positionals.count == 1 else {
            throw Arguments.UsageError(description: args.positionals.isEmpty ? "give the question, in quotes" : "give the question as one argument, in quotes")
        }
        let question = args.positionals[0]
        guard !question.allSatisfy(\.isWhitespace) else { throw Arguments.UsageError(description: "the question is empty") }
        for option in ["--model", "--system"] {
            if let value = args[option], value.isEmpty { throw Arguments.UsageError(description: "\(option) takes a non-empty value") }
        }
        let waitTimeout = try timeout(args)
        if args["--timeout"] != nil && !args.has("--wait") {
            throw Arguments.UsageError(description: "--timeout applies to --wait only")
        }
        let id = args["--id"] ?? newID()
        guard case .request(let parsed) = RequestName.classify(id + ".md"), parsed == id, !id.contains("/") else {
            throw Arguments.UsageError(description: "--id \"\(Logger.escape(id))\" cannot be used as a request id")
        }
        let layout = try ClientSpool.existing(args)
        let text = AskPrompt.text(question: question, model: args["--model"], system: args["--system"])
        if args.has("--progress") && !args.has("--wait") {
            throw Arguments.UsageError(description: "--progress applies to --wait only")
        }
        return try drop(Array(text.utf8), id: id, suffix: ".md", source: "the question", layout: layout, wait: args.has("--wait"), timeout: waitTimeout,
                        progress: ProgressMode(forced: args.has("--progress")))
    }

    /// A request dropped into a folder the group shares must be readable by the daemon's
    /// group: 0640 there (the setgid folder gives it the group), the owner's only elsewhere.
    static func requestMode(_ layout: SpoolLayout) -> mode_t {
        // Cannot look at outgoing: the owner-only mode, and the drop itself names the problem.
        guard let info = try? Syscall.lstat(layout.outgoing), info.st_mode & 0o020 != 0 else { return 0o600 }
        return 0o640
    }

    static func wait(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ClientSpool.valued.union(["--timeout"]), switches: ["--help", "--progress"])
        if args.has("--help") {
            print(Help.wait)
            return 0
        }
        guard args.positionals.count == 1 else { throw Arguments.UsageError(description: "give one request ID") }
        let waitTimeout = try timeout(args)
        let layout = try ClientSpool.layout(args)
        let id = try ClientSpool.name(args.positionals[0])
        if SpoolQuery(layout: layout).state(of: id) == .unknown {
            throw ConfigError("no request \(Logger.escape(id)) in \(layout.root)")
        }
        return follow(id, layout: layout, timeout: waitTimeout, progress: ProgressMode(forced: args.has("--progress")))
    }

    static func timeout(_ args: Arguments) throws -> Double? {
        guard let text = args["--timeout"] else { return nil }
        guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
            throw Arguments.UsageError(description: "--timeout takes a number of seconds above 0, not \"\(Logger.escape(text))\"")
        }
        return seconds
    }

    /// Ctrl-C (or SIGTERM) while following stops the following only: the request stays in
    /// the spool, and the message says so and how to follow it again. Exit status 130.
    static func interruptMessage(_ id: String, clearLine: Bool) -> any DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler {
            let clear = clearLine ? "\r\u{1B}[K" : "\n"
            FileHandle.standardError.write(Data("\(clear)llmspool: \(id) is still running; `llmspool wait \(id)` to follow\n".utf8))
            exit(130)
        }
        source.resume()
        return source
    }

    /// A sortable id that no other submit picks: time, then randomness.
    static func newID() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16).leftPadded(toLength: 8)
        return "\(formatter.string(from: Date()))-\(suffix)"
    }

    /// Streams the answer's text to stdout, and the live line to stderr (see `ProgressMode`).
    static func follow(_ id: String, layout: SpoolLayout, timeout: Double?, progress mode: ProgressMode,
                       interrupt installed: (any DispatchSourceSignal)? = nil) -> Int32 {
        // Text streaming to the same terminal takes the screen: the line stops when text
        // starts and its last state is printed once the answer is complete.
        let textOnTerminal = isatty(1) == 1 && mode == .terminal
        var textShown = false
        var lastText = ""
        var lastProgress: RequestFollower.Progress?
        var printer = ProgressPrinter(mode: mode)
        let follower = RequestFollower(layout: layout, id: id, onText: { text in
            if textOnTerminal && !textShown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            textShown = true
            lastText = text
            FileHandle.standardOutput.write(Data(text.utf8))
        }, onProgress: { progress in
            lastProgress = progress
            guard !(textOnTerminal && textShown) else { return }
            if let output = printer.output(for: progress) { FileHandle.standardError.write(Data(output.utf8)) }
        })
        let interrupt = installed ?? interruptMessage(id, clearLine: mode == .terminal)
        let ending = follower.run(timeout: timeout)
        interrupt.cancel()
        if mode == .terminal && !(textOnTerminal && textShown) { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        if isatty(1) == 1 && textShown && !lastText.hasSuffix("\n") { FileHandle.standardOutput.write(Data("\n".utf8)) }
        if case .done = ending, mode != .none, let rate = follower.tokensPerSecond {
            // How fast it came, which a streamed answer on the terminal had no room to show.
            FileHandle.standardError.write(Data(String(format: "done  %.1fs  attempt %d  %.0f tok/s\n", follower.elapsed, lastProgress?.attempt ?? 1, rate).utf8))
        }
        switch ending {
        case .done:
            return 0
        case .failed(let message, let record):
            FileHandle.standardError.write(Data("llmspool: \(id) failed: \(message) (\(record))\n".utf8))
            return 1
        case .cancelled:
            FileHandle.standardError.write(Data("llmspool: \(id) was cancelled\n".utf8))
            return 1
        case .unusable(let reason, let path):
            FileHandle.standardError.write(Data("llmspool: \(Logger.escape(path)) is left in outgoing and never sent: \(Logger.escape(reason))\n".utf8))
            return 1
        case .timedOut:
            FileHandle.standardError.write(Data("llmspool: gave up waiting for \(id); it is still in the spool\n".utf8))
            return 124
        }
    }
}

extension String {
    func leftPadded(toLength width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
