import Foundation
import Glibc
import LLMSpoolCore

/// `llmspool submit` and `llmspool wait`: drop a request safely, and follow one to its end.
enum SubmitCommand {
    static func submit(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool", "--id", "--timeout"], switches: ["--help", "--wait"])
        if args.has("--help") {
            print(Help.submit)
            return 0
        }
        guard args.positionals.count == 1 else { throw Arguments.UsageError(description: "give one FILE, or - for standard input") }
        let source = args.positionals[0]
        let layout = SpoolLayout(root: args["--spool"] ?? "./spool")
        let limit = Config().maxRequestBytes
        let bytes: [UInt8]
        if source == "-" {
            bytes = Array(FileHandle.standardInput.readDataToEndOfFile().prefix(limit + 1))
        } else {
            do { bytes = try FileReader.prefix(path: source, limit: limit + 1) } catch { throw ConfigError("cannot read \(source): \(error)") }
        }
        guard bytes.count <= limit else { throw ConfigError("\(source) is larger than \(limit) bytes") }
        let id = args["--id"] ?? newID()
        guard Syscall.isPresent(layout.outgoing) else { throw ConfigError("\(layout.outgoing) does not exist; is --spool right? (llmspool run creates it)") }
        guard !Syscall.isPresent(layout.request(id)) else { throw ConfigError("a request with id \(id) is already queued") }
        do {
            try Submitter.submit(bytes, id: id, layout: layout)
        } catch let problem as RequestProblem {
            throw ConfigError("\(source == "-" ? "standard input" : source): \(problem)")
        }
        guard args.has("--wait") else {
            print(id)
            return 0
        }
        FileHandle.standardError.write(Data("\(id)\n".utf8))
        return follow(id, layout: layout, timeout: try timeout(args))
    }

    static func wait(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool", "--timeout"], switches: ["--help"])
        if args.has("--help") {
            print(Help.wait)
            return 0
        }
        guard args.positionals.count == 1 else { throw Arguments.UsageError(description: "give one request ID") }
        let layout = SpoolLayout(root: args["--spool"] ?? "./spool")
        let id = args.positionals[0]
        if SpoolQuery(layout: layout).state(of: id) == .unknown {
            throw ConfigError("no request \(id) in \(layout.root)")
        }
        return follow(id, layout: layout, timeout: try timeout(args))
    }

    static func timeout(_ args: Arguments) throws -> Double? {
        guard let text = args["--timeout"] else { return nil }
        guard let seconds = Double(text), seconds > 0 else { throw Arguments.UsageError(description: "--timeout takes seconds") }
        return seconds
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

    /// Streams the answer's text to stdout; on a terminal, a live line on stderr.
    static func follow(_ id: String, layout: SpoolLayout, timeout: Double?) -> Int32 {
        let live = isatty(1) == 1 && isatty(2) == 1
        var textShown = false
        var lastText = ""
        let follower = RequestFollower(layout: layout, id: id, onText: { text in
            if live && !textShown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            textShown = true
            lastText = text
            FileHandle.standardOutput.write(Data(text.utf8))
        }, onProgress: { progress in
            guard live && !textShown else { return }
            var line = String(format: "%@  %.1fs  attempt %d", progress.state.rawValue.replacingOccurrences(of: "_", with: " "),
                              progress.elapsed, progress.attempt)
            if let rate = progress.tokensPerSecond { line += String(format: "  %.0f tok/s", rate) }
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
        })
        let ending = follower.run(timeout: timeout)
        if live && !textShown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        if isatty(1) == 1 && textShown && !lastText.hasSuffix("\n") { FileHandle.standardOutput.write(Data("\n".utf8)) }
        switch ending {
        case .done:
            return 0
        case .failed(let message, let record):
            FileHandle.standardError.write(Data("llmspool: \(id) failed: \(message) (\(record))\n".utf8))
            return 1
        case .cancelled:
            FileHandle.standardError.write(Data("llmspool: \(id) was cancelled\n".utf8))
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
