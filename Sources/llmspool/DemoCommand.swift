import Foundation
import LLMSpoolCore
import LLMSpoolStub
import Synchronization

/// `llmspool demo`: the stub and the daemon together on the sample requests.
enum DemoCommand {
    static func main(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool", "--timeout"], switches: ["--help"])
        if args.has("--help") {
            print(Help.demo)
            return 0
        }
        let timeout = try args.integer("--timeout", default: 60, range: 1...86_400)
        var config = Config()
        config.spool = args["--spool"] ?? "./spool"
        config.concurrency = 8
        config.logLevel = .warning
        let layout = SpoolLayout(root: config.spool)

        let stub = try StubServer(port: 0, defaults: StubDirectives(tokens: 12, tokenDelayMs: 15))
        let reports = Mutex<[String: TaskReport]>([:])
        let arrived = DispatchSemaphore(value: 0)
        let daemon = try SpoolDaemon(config: config, endpoints: [Endpoint(name: "stub", baseURL: stub.baseURL, apiKey: nil)],
                                     logger: Logger(minimum: config.logLevel)) { report in
            reports.withLock { $0[report.id] = report }
            arrived.signal()
        }
        print("local endpoint: \(stub.baseURL)")
        try daemon.start()
        var ids: [String] = []
        for (id, text) in DemoSamples.all {
            let path = try Submitter.submit(Array(text.utf8), id: id, layout: layout)
            print("dropped \(path)")
            ids.append(id)
        }
        let deadline = DispatchTime.now() + .seconds(timeout)
        while reports.withLock({ finished in !ids.allSatisfy { finished[$0].map(isFinal) ?? false } }) {
            if arrived.wait(timeout: deadline) == .timedOut { break }
        }
        daemon.stop()
        stub.stop()
        let finished = reports.withLock { $0 }
        var complete = true
        for id in ids {
            switch finished[id]?.outcome {
            case .succeeded(let path)?:
                print("\(id): done -> \(path)")
                print("    \(answerText(path))")
            case .failed(let record, _, let message)?:
                print("\(id): failed -> \(record)")
                print("    \(message)")
            case .cancelled?:
                print("\(id): cancelled")
            case .deferred(let reason)?:
                complete = false
                print("\(id): not finished: \(reason)")
            case nil:
                complete = false
                print("\(id): not finished within \(timeout) s; it stays in \(layout.outgoing)")
            }
        }
        return complete ? 0 : 1
    }

    static func isFinal(_ report: TaskReport) -> Bool {
        if case .deferred = report.outcome { return false }
        return true
    }

    /// The assistant's text from a result, for the summary line.
    static func answerText(_ path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path),
              // A result without text shows as "(no text)": the summary line is the answer.
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let choices = object["choices"] as? [[String: Any]],
              let message = choices.first?["message"] as? [String: Any],
              let content = message["content"] as? String else { return "(no text)" }
        return "answer: " + content
    }
}
