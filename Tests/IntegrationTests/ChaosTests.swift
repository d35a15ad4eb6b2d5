import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// kill -9 at random moments, many rounds, then one clean run: every request must end
/// exactly once, with its whole answer, and nothing may be left in `outgoing` or as a
/// `.partial`. CI runs a short version; the long one:
///
///     LLMSPOOL_CHAOS_ROUNDS=60 LLMSPOOL_CHAOS_REQUESTS=400 swift test --filter ChaosTests
@Suite(.serialized) struct ChaosTests {
    static let environment = ProcessInfo.processInfo.environment
    static let rounds = Int(environment["LLMSPOOL_CHAOS_ROUNDS"] ?? "") ?? 8
    static let requests = Int(environment["LLMSPOOL_CHAOS_REQUESTS"] ?? "") ?? 150

    enum Expected {
        case answer(prompt: String, tokens: Int)
        case failure(kind: String)
    }

    @Test func killNineAtRandomMomentsLosesNothingAndDoesNothingTwice() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        var expected: [String: Expected] = [:]
        var generator = SystemRandomNumberGenerator()
        for index in 0..<Self.requests {
            let id = "chaos\(index)"
            let prompt = "chaos request \(index)"
            switch index % 10 {
            case 0:
                // Broken: fails at intake, without an attempt.
                try harness.drop(id, bytes: Array("{\"model\": \"m\", \"messages\": [".utf8))
                expected[id] = .failure(kind: "invalid-request")
            case 1:
                // Refused on every attempt: a kill between the 400 and its record sends it
                // again, and it must be refused again.
                try harness.drop(id, Harness.request(prompt, stub: ["status": 400]))
                expected[id] = .failure(kind: "http")
            case 2:
                // Fails twice, then answers: retry records are written while kills happen.
                try harness.drop(id, Harness.request(prompt, stream: true, stub: ["tokens": 6, "token_delay_ms": 40,
                                                                                  "faults": [["status": 503], ["cut_after": 3]]]))
                expected[id] = .answer(prompt: prompt, tokens: 6)
            default:
                let stream = index % 3 != 0
                try harness.drop(id, Harness.request(prompt, stream: stream, stub: ["tokens": 10, "token_delay_ms": 40, "latency_ms": 50]))
                expected[id] = .answer(prompt: prompt, tokens: 10)
            }
        }
        let config: [String: Any] = ["concurrency": 24, "max_attempts": 50, "retry_max_seconds": 0.2]
        for _ in 0..<Self.rounds {
            try harness.startDaemon(config: config, waitUntilWatching: false)
            usleep(UInt32.random(in: 150_000...1_200_000, using: &generator))
            harness.killDaemon()
        }
        try harness.startDaemon(config: config)
        try waitUntil("outgoing is empty", timeout: 300) { harness.files(in: harness.layout.outgoing).isEmpty }
        #expect(harness.stopDaemon() == 0)

        let incoming = Set(harness.files(in: harness.layout.incoming))
        let failed = Set(harness.files(in: harness.layout.failed))
        for (id, outcome) in expected.sorted(by: { $0.key < $1.key }) {
            let answered = incoming.contains("\(id).json")
            let refused = failed.contains("\(id).json")
            #expect(answered != refused, "\(id) must have exactly one outcome (answered \(answered), failed \(refused))")
            switch outcome {
            case .answer(let prompt, let tokens):
                #expect(answered, "\(id) should be answered")
                if answered {
                    #expect(Harness.content(of: try harness.json(harness.layout.result(id))) == StubAnswer.content(prompt: prompt, tokens: tokens), "\(id)")
                }
            case .failure(let kind):
                #expect(refused, "\(id) should have failed")
                if refused {
                    #expect(try harness.json(harness.layout.errorRecord(id))["kind"] as? String == kind, "\(id)")
                }
            }
            // Outcome lines across every run: a result or a failure is published once.
            let published = harness.log.components(separatedBy: "\n").filter {
                ($0.contains("info: done") || $0.contains("warning: failed")) && $0.contains("id=\(id) ")
            }
            #expect(published.count <= 1, "\(id) was published \(published.count) times: \(published)")
        }
        #expect(incoming.filter { $0.hasSuffix(".partial") || $0.hasPrefix(".") }.isEmpty, "no partial or temporary is left")
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        #expect(harness.filesContainingSecret().isEmpty)
        let log = harness.log
        let leftovers = log.components(separatedBy: "removed leftovers of an earlier run").count - 1
        let rolledForward = log.components(separatedBy: "(completed after a restart)").count - 1
        let retried = log.components(separatedBy: "attempt failed; will retry").count - 1
        print("chaos: \(Self.rounds) kills, \(Self.requests) requests; restarts that found leftovers: \(leftovers); outcomes rolled forward: \(rolledForward); retries: \(retried)")
    }
}
