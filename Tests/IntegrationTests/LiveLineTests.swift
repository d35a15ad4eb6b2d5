import Foundation
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// The live line of `submit --wait`, run as a subprocess with `--progress` (stderr is a pipe,
/// so the line comes one line per change): it says what `show` says while it happens.
@Suite(.serialized) struct LiveLineTests {
    func requestText(_ prompt: String, stream: Bool = false, stub: [String: Any]? = nil) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: Harness.request(prompt, stream: stream, stub: stub)), as: UTF8.self)
    }

    func lines(_ stderr: String) -> [String] { stderr.split(separator: "\n").map(String.init) }

    @Test func aStreamIsInFlightWithItsTokenRateThenDone() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let prompt = "a slow stream"
        let input = try requestText(prompt, stream: true, stub: ["tokens": 40, "token_delay_ms": 60])
        let finished = try harness.cli(["submit", "-", "--wait", "--progress", "--id", "slow", "--config", harness.configPath, "--timeout", "60"],
                                       stdin: input)
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(finished.stdout == StubAnswer.content(prompt: prompt, tokens: 40), "stdout carries the answer's text alone")
        let all = lines(finished.stderr)
        let flying = all.filter { $0.hasPrefix("in-flight  ") }
        #expect(!flying.isEmpty, "never shown in flight: \(all)")
        #expect(flying.contains { $0.contains(" tok/s") && $0.contains("attempt 1") }, "no token rate while streaming: \(all)")
        if let first = all.firstIndex(where: { $0.hasPrefix("in-flight") }) {
            #expect(!all[first...].contains { $0.hasPrefix("queued") }, "queued after it started: \(all)")
        }
        #expect(all.last?.hasPrefix("done  ") == true && all.last?.hasSuffix(" tok/s") == true, "no closing rate: \(all)")
        #expect(!finished.stderr.contains("\u{1B}["), "no terminal codes in lines mode")
    }

    @Test func theAttemptCountAdvancesOverRefusedConnections() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let port = try HeldRequestsTests.refusedPort()
        try harness.startDaemon(config: ["endpoints": [["name": "down", "base_url": "http://127.0.0.1:\(port)/v1"]],
                                         "retry_initial_seconds": 0.8, "retry_max_seconds": 0.8, "max_attempts": 4])
        let finished = try harness.cli(["submit", "-", "--wait", "--progress", "--id", "down", "--config", harness.configPath, "--timeout", "60"],
                                       stdin: try requestText("nobody answers"))
        #expect(finished.status == 1, "\(finished.stderr)")
        let all = lines(finished.stderr)
        let attempts = all.compactMap { line -> Int? in
            guard let range = line.range(of: #"attempt \d+"#, options: .regularExpression) else { return nil }
            return Int(line[range].dropFirst("attempt ".count))
        }
        #expect(attempts == attempts.sorted(), "the count went back: \(all)")
        #expect(Set(attempts).isSuperset(of: [2, 3, 4]), "the count did not advance: \(all)")
        let waiting = all.filter { $0.hasPrefix("waiting  ") }
        #expect(waiting.contains { $0.contains("next attempt in") && $0.contains("after: Failed to connect") }, "\(all)")
        #expect(all.last?.contains("down failed") == true, "\(all)")
    }

    @Test func progressWithoutWaitIsRefusedBeforeAnythingIsDropped() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let finished = try harness.cli(["submit", "-", "--progress", "--spool", harness.layout.root], stdin: try requestText("x"))
        #expect(finished.status == 2 && finished.stderr.contains("--progress applies to --wait only"), "\(finished.stderr)")
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
    }

    @Test func withoutADaemonTheLineSaysWhyItIsQueued() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let finished = try harness.cli(["submit", "-", "--wait", "--progress", "--id", "alone", "--spool", harness.layout.root, "--timeout", "1"],
                                       stdin: try requestText("nobody runs"))
        #expect(finished.status == 124, "\(finished.stderr)")
        #expect(lines(finished.stderr).contains { $0.hasPrefix("queued  ") && $0.hasSuffix("(no daemon running)") }, "\(finished.stderr)")
    }

    @Test func showOfAnUnknownIDSaysSoOnStderr() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let finished = try harness.cli(["show", "nope", "--spool", harness.layout.root])
        #expect(finished.status == 1)
        #expect(finished.stderr == "llmspool: show: no request nope in \(harness.layout.root) (not in outgoing, hold, incoming or failed)\n", "\(finished.stderr)")
        #expect(JSONObject.parse(Array(finished.stdout.utf8))?["state"] as? String == "unknown", "scripts still get the object")
    }
}
