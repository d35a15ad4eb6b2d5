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

    /// A publication plan as the daemon's pause point logs it (`index=K step=KIND`, the index
    /// counted per executor run), the request that takes it, and its commit point.
    struct PlanUnderTest {
        let name: String
        let steps: [String]
        /// How many of `steps` (from the first) leave nothing a restart counts as the outcome
        /// when a kill lands in them, so the request is sent again. For a success that is up
        /// to and with `publish`, not only up to the record that names the result's inode:
        /// `Recovery.decide` counts a success as ended only once the result is in `incoming`.
        let beforeCommit: Int
        let stream: Bool
        let stub: [String: Any]
        let expected: (String) -> Expected
        /// The request file's ending: `.md` for a prompt file, whose stream's raw events go
        /// aside and whose success publishes a transcript.
        var suffix = ".json"
    }

    /// The plans in the commit order the daemon chose for the spool (it logs it at start):
    /// one fsync per result where the filesystem keeps user extended attributes, else two.
    static func plans(marked: Bool) -> [PlanUnderTest] {
        marked ? markedPlans : recordFirstPlans
    }

    /// A success's steps when its result carries the commit point (no fsync of `state`).
    static var markedPlans: [PlanUnderTest] {
        recordFirstPlans.map { plan in
            guard plan.steps.first == "index=0 step=sync-file" else { return plan }
            let commit = plan.steps.dropFirst(3)
            var steps = ["index=0 step=mark-result", "index=1 step=sync-file", "index=2 step=commit-done"]
            for (index, step) in commit.enumerated() {
                steps.append("index=\(index) step=" + step.split(separator: "=").last!)
            }
            return PlanUnderTest(name: plan.name, steps: steps, beforeCommit: plan.beforeCommit, stream: plan.stream, stub: plan.stub,
                                 expected: plan.expected, suffix: plan.suffix)
        }
    }

    static var recordFirstPlans: [PlanUnderTest] {
        [
            PlanUnderTest(name: "plain",
                          steps: ["index=0 step=sync-file", "index=1 step=commit-done",
                                  "index=0 step=sync-folder", "index=1 step=publish", "index=2 step=sync-folder",
                                  "index=3 step=remove-request", "index=4 step=sync-folder"],
                          beforeCommit: 4, stream: false, stub: ["tokens": 3], expected: { .answer(prompt: $0, tokens: 3) }),
            PlanUnderTest(name: "streamed",
                          steps: ["index=0 step=sync-file", "index=1 step=commit-done",
                                  "index=0 step=sync-folder", "index=1 step=keep-events", "index=2 step=publish", "index=3 step=sync-folder",
                                  "index=4 step=remove-request", "index=5 step=sync-folder"],
                          beforeCommit: 5, stream: true, stub: ["tokens": 3], expected: { .answer(prompt: $0, tokens: 3) }),
            PlanUnderTest(name: "refused",
                          steps: ["index=0 step=record-failed", "index=1 step=sync-folder", "index=2 step=archive", "index=3 step=archive",
                                  "index=4 step=write-file", "index=5 step=move-request", "index=6 step=sync-folder",
                                  "index=7 step=sync-folder", "index=8 step=remove-partial"],
                          beforeCommit: 1, stream: false, stub: ["status": 400], expected: { _ in .failure(kind: "http") }),
            PlanUnderTest(name: "prompt",
                          steps: ["index=0 step=sync-file", "index=1 step=commit-done",
                                  "index=0 step=sync-folder", "index=1 step=keep-events", "index=2 step=write-file", "index=3 step=publish",
                                  "index=4 step=sync-folder", "index=5 step=remove-partial", "index=6 step=remove-request", "index=7 step=sync-folder"],
                          beforeCommit: 6, stream: true, stub: ["tokens": 3], expected: { .answer(prompt: $0, tokens: 3) }, suffix: ".md"),
            PlanUnderTest(name: "promptrefused",
                          steps: ["index=0 step=record-failed", "index=1 step=sync-folder", "index=2 step=archive", "index=3 step=archive",
                                  "index=4 step=write-file", "index=5 step=move-request", "index=6 step=sync-folder",
                                  "index=7 step=sync-folder", "index=8 step=remove-partial"],
                          beforeCommit: 1, stream: true, stub: ["status": 400], expected: { _ in .failure(kind: "http") }, suffix: ".md"),
        ]
    }

    /// The publication steps the daemon logged after `offset` bytes of its log.
    static func publicationSteps(in log: String, after offset: Int) -> [String] {
        String(decoding: Array(log.utf8.dropFirst(offset)), as: UTF8.self).components(separatedBy: "\n").compactMap { line in
            guard let range = line.range(of: #"publication step index=\d+ step=\S+"#, options: .regularExpression) else { return nil }
            return String(line[range].dropFirst("publication step ".count))
        }
    }

    /// One request at a time, a kill inside each step of each publication plan in turn: the
    /// pause point logs the step and waits, the kill lands in that wait, and the log shows
    /// that no later step ran. Whatever step it was, a restart leaves exactly one outcome.
    @Test func killNineInsideEachPublicationStepLeavesOneOutcome() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let pause = ["LLMSPOOL_TEST_PUBLICATION_PAUSE_MS": "200"]
        let config: [String: Any] = ["concurrency": 1, "max_attempts": 5, "retry_max_seconds": 0.2]
        var landed: Set<String> = []
        try harness.startDaemon(config: config)
        let marked = harness.log.contains("commit_order=result-marked")
        #expect(marked || harness.log.contains("commit_order=record-first"), "the daemon names its commit order")
        #expect(harness.stopDaemon() == 0)
        let plans = Self.plans(marked: marked)
        for plan in plans {
            for position in plan.steps.indices {
                let id = "\(plan.name)\(position)"
                let prompt = "chaos \(id)"
                let offset = harness.log.utf8.count
                // Held in the step until killed: a kill that comes late still lands inside it.
                try harness.startDaemon(config: config, environment: pause.merging(["LLMSPOOL_TEST_PUBLICATION_HOLD_AT": "\(position + 1)"]) { $1 })
                if plan.suffix == ".md" {
                    let stub = String(decoding: try JSONSerialization.data(withJSONObject: plan.stub), as: UTF8.self)
                    let hidden = "\(harness.layout.outgoing)/.\(id).md.tmp"
                    try DurableFile.write(Array("---\nmodel: stub-model\nparams:\n  stub: \(stub)\n---\n\(prompt)\n".utf8), to: hidden, syncDirectory: false)
                    try Syscall.rename(hidden, "\(harness.layout.outgoing)/\(id).md")
                } else {
                    try harness.drop(id, Harness.request(prompt, stream: plan.stream, stub: plan.stub))
                }
                try waitUntil("\(id) reaches \(plan.steps[position])", timeout: 30) {
                    Self.publicationSteps(in: harness.log, after: offset).count > position
                }
                #expect(harness.daemonIsRunning, "\(id): the daemon must still run when it is killed")
                harness.killDaemon()
                // The kill landed inside the step only if the log shows every step up to it and none after.
                let seen = Self.publicationSteps(in: harness.log, after: offset)
                #expect(seen == Array(plan.steps[...position]), "\(id): steps before the kill")
                if seen == Array(plan.steps[...position]) { landed.insert("\(plan.name) \(plan.steps[position])") }

                try harness.startDaemon(config: config)
                try waitUntil("\(id) has an outcome", timeout: 30) {
                    let incoming = harness.files(in: harness.layout.incoming)
                    return !harness.files(in: harness.layout.outgoing).contains("\(id)\(plan.suffix)")
                        && !incoming.contains("\(id).partial")
                        && (incoming.contains("\(id).json") || harness.files(in: harness.layout.failed).contains("\(id)\(plan.suffix)"))
                }
                #expect(harness.stopDaemon() == 0)

                let answered = harness.files(in: harness.layout.incoming).contains("\(id).json")
                let refused = harness.files(in: harness.layout.failed).contains("\(id)\(plan.suffix)")
                #expect(answered != refused, "\(id) must have exactly one outcome (answered \(answered), failed \(refused))")
                switch plan.expected(prompt) {
                case .answer(let prompt, let tokens):
                    #expect(answered && !refused, "\(id) should be answered")
                    if answered {
                        #expect(Harness.content(of: try harness.json(harness.layout.result(id))) == StubAnswer.content(prompt: prompt, tokens: tokens), "\(id)")
                        if plan.suffix == ".md" {
                            #expect((try? String(contentsOfFile: harness.layout.transcript(id), encoding: .utf8))?
                                .hasSuffix("## assistant\n\n\(StubAnswer.content(prompt: prompt, tokens: tokens))\n") == true, "\(id): its transcript")
                        }
                    }
                case .failure(let kind):
                    #expect(refused && !answered, "\(id) should have failed")
                    if refused {
                        #expect(try harness.json(harness.layout.errorRecord(id))["kind"] as? String == kind, "\(id)")
                    }
                }
                // A kill before the outcome is committed costs one more call; after it, none.
                let calls = try harness.arrivals(of: prompt).count
                let allowed = 1 + (position < plan.beforeCommit ? 1 : 0)
                #expect((1...allowed).contains(calls), "\(id): the stub saw \(calls) calls, at most \(allowed) allowed")
            }
        }
        let everyStep = Set(plans.flatMap { plan in plan.steps.map { "\(plan.name) \($0)" } })
        #expect(landed == everyStep, "kills that did not land: \(everyStep.subtracting(landed).sorted())")
        // Every kind the plans have was hit, the folder fsyncs of each plan among them.
        let kinds = Set(landed.compactMap { $0.split(separator: "=").last.map(String.init) })
        #expect(kinds.isSuperset(of: (marked ? ["mark-result"] : []) + ["sync-file", "commit-done", "record-failed", "keep-events", "publish", "sync-folder", "remove-request",
                                      "move-request", "archive", "write-file", "remove-partial"]), "\(kinds.sorted())")
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        #expect(harness.files(in: harness.layout.incoming).filter { $0.hasSuffix(".partial") || $0.hasPrefix(".") }.isEmpty)
        #expect(harness.filesContainingSecret().isEmpty)
    }
}
