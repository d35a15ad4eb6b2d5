import Foundation
import LLMSpoolCore
import LLMSpoolStub

/// `llmspool stub`: the local endpoint, in the foreground.
enum StubCommand {
    static func main(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--port", "--tokens", "--latency-ms", "--token-delay-ms",
                                                   "--batch-seconds", "--batch-faults", "--batch-ending"], switches: ["--help"])
        if args.has("--help") {
            print(Help.stub)
            return 0
        }
        let defaults = StubDirectives(
            tokens: try args.integer("--tokens", default: 8, range: 1...10_000_000),
            latencyMs: try args.integer("--latency-ms", default: 0, range: 0...3_600_000),
            tokenDelayMs: try args.integer("--token-delay-ms", default: 0, range: 0...3_600_000))
        var batchOptions = StubBatchOptions(seconds: Double(try args.integer("--batch-seconds", default: 0, range: 0...86_400)))
        if let text = args["--batch-faults"] {
            switch StubBatchOptions.faults(text) {
            case .success(let faults):
                batchOptions.uploadFaults = faults.upload
                batchOptions.createFaults = faults.create
                batchOptions.pollFaults = faults.poll
                batchOptions.downloadFaults = faults.download
            case .failure(let error):
                throw Arguments.UsageError(description: error.description)
            }
        }
        if let ending = args["--batch-ending"] {
            guard StubBatchOptions.endings.contains(ending) else {
                throw Arguments.UsageError(description: "--batch-ending must be completed, expired or failed, not \"\(Logger.escape(ending))\"")
            }
            batchOptions.ending = ending
        }
        let port = try args.integer("--port", default: 8088, range: 0...65535)
        let signals = Signals()
        let server = try StubServer(port: UInt16(port), defaults: defaults, batchOptions: batchOptions)
        // Written unbuffered: whoever started the stub waits for this line.
        FileHandle.standardOutput.write(Data("listening on \(server.baseURL)\n".utf8))
        _ = signals.wait()
        server.stop()
        return 0
    }
}
