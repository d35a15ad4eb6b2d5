import Foundation
import LLMSpoolCore
import LLMSpoolModel
import Testing

/// Batch files with the real daemon and the stub: validation before anything is sent, the
/// output line of every input line exactly once, cancellation by deletion, kill -9.
@Suite(.serialized) struct BatchTests {
    /// One OpenAI batch line; `stub` directives make it fail or wait.
    static func line(_ id: String, prompt: String? = nil, stream: Bool = false, stub: [String: Any]? = nil) -> String {
        let body = Harness.request(prompt ?? "prompt of \(id)", stream: stream, stub: stub)
        let object: [String: Any] = ["custom_id": id, "method": "POST", "url": "/v1/chat/completions", "body": body]
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Drops `outgoing/<name>.jsonl` as producers should: a dot-file, then a rename.
    static func dropBatch(_ harness: Harness, _ name: String, _ lines: [String]) throws {
        let hidden = "\(harness.layout.outgoing)/.\(name).jsonl.tmp"
        try DurableFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: hidden, syncDirectory: false)
        try Syscall.rename(hidden, harness.layout.batchRequest(name))
    }

    static func outputLines(_ path: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.isEmpty || text.hasSuffix("\n"), "the output ends with a whole line")
        return try text.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw HarnessError("an output line is not an object: \(line.prefix(200))")
            }
            return object
        }
    }

    /// The errors file holds the output's failed lines alone, as they are there and in
    /// their order, and the summary names it; with none failed, there is no errors file.
    /// Returns the names of the batch's files in `incoming` that should be there.
    @discardableResult
    static func expectErrorsFile(_ harness: Harness, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let output = try String(contentsOfFile: harness.layout.batchOutput(name), encoding: .utf8).split(separator: "\n")
        let failed = try output.filter { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if let result = object["result"] as? [String: Any] { return result["type"] as? String != "succeeded" }
            return !(object["error"] is NSNull)
        }
        let summary = try harness.json(harness.layout.batchSummary(name))
        let files = ["\(name).batch.json", "\(name).jsonl"]
        guard !failed.isEmpty else {
            #expect(!Syscall.isPresent(harness.layout.batchErrors(name)), "no line failed: no errors file", sourceLocation: sourceLocation)
            #expect(summary["error_file_id"] is NSNull, sourceLocation: sourceLocation)
            return files
        }
        let errors = try String(contentsOfFile: harness.layout.batchErrors(name), encoding: .utf8)
        #expect(errors == failed.joined(separator: "\n") + "\n", "the errors file is the failed lines of the output", sourceLocation: sourceLocation)
        #expect(summary["error_file_id"] as? String == harness.layout.batchErrors(name), sourceLocation: sourceLocation)
        return (files + ["\(name).errors.jsonl"]).sorted()
    }

    /// The batch `name` as `status --json` reports it; empty when it is not listed.
    static func reported(_ harness: Harness, _ name: String) throws -> [String: Any] {
        let json = try harness.cli(["status", "--json", "--spool", harness.layout.root])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        return (object?["batches"] as? [[String: Any]])?.first { $0["name"] as? String == name } ?? [:]
    }

    static func waitForSummary(_ harness: Harness, _ name: String, timeout: TimeInterval) throws -> [String: Any] {
        try waitUntil("\(name).batch.json appears", timeout: timeout) {
            FileManager.default.fileExists(atPath: harness.layout.batchSummary(name))
        }
        return try harness.json(harness.layout.batchSummary(name))
    }

    /// Each line's output by custom_id; records an issue for a duplicate.
    static func byID(_ lines: [[String: Any]]) -> [String: [String: Any]] {
        var found: [String: [String: Any]] = [:]
        for line in lines {
            guard let id = line["custom_id"] as? String else {
                Issue.record("an output line has no custom_id: \(line)")
                continue
            }
            #expect(found[id] == nil, "custom_id \(id) appears twice in the output")
            found[id] = line
        }
        return found
    }

    /// The answers' bodies in a JSONL file, for the SDK's type.
    static func judgeBodies(_ lines: [[String: Any]], in root: String) throws {
        let bodies = try lines.compactMap { line -> String? in
            guard let body = (line["response"] as? [String: Any])?["body"], line["error"] is NSNull else { return nil }
            return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        }
        let path = root + "/bodies.jsonl"
        try Data((bodies.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        try SDKJudge.expectParses("ChatCompletion", [path], jsonl: true)
    }

    @Test func aBatchAnswersEveryLineOnceInOpenAIsShape() throws {
        let count = Int(ProcessInfo.processInfo.environment["LLMSPOOL_BATCH_LINES"] ?? "") ?? 10_000
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 64, "max_attempts": 2])
        var lines: [String] = []
        for index in 0..<count {
            // Every 97th line is refused by the endpoint (400, never retried); every 10th streams.
            let stub: [String: Any]? = index % 97 == 5 ? ["status": 400] : nil
            lines.append(Self.line("req-\(index)", stream: index % 10 == 3, stub: stub))
        }
        let started = Date()
        try Self.dropBatch(harness, "big", lines)
        let summary = try Self.waitForSummary(harness, "big", timeout: 600)
        let seconds = Date().timeIntervalSince(started)
        let failing = (0..<count).filter { $0 % 97 == 5 }.count
        #expect(summary["status"] as? String == "completed")
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["total"] as? Int == count)
        #expect(counts["completed"] as? Int == count - failing)
        #expect(counts["failed"] as? Int == failing)
        #expect(((summary["usage"] as? [String: Any])?["total_tokens"] as? Int ?? 0) > 0, "usage totals are summed")
        try SDKJudge.expectParses("Batch", [harness.layout.batchSummary("big")])

        let output = try Self.outputLines(harness.layout.batchOutput("big"))
        #expect(output.count == count)
        let found = Self.byID(output)
        #expect(found.count == count)
        for index in 0..<count {
            guard let line = found["req-\(index)"] else {
                Issue.record("req-\(index) has no output line")
                continue
            }
            #expect((line["id"] as? String)?.hasPrefix("batch_req_") == true)
            let response = line["response"] as? [String: Any]
            if index % 97 == 5 {
                #expect((line["error"] as? [String: Any])?["code"] as? String == "http", "req-\(index): \(line)")
                #expect(response?["status_code"] as? Int == 400)
            } else {
                #expect(line["error"] is NSNull, "req-\(index): \(line)")
                #expect(response?["status_code"] as? Int == 200)
                let content = Harness.content(of: response?["body"] as? [String: Any] ?? [:])
                #expect(content?.hasPrefix("Echo: prompt of req-\(index)") == true, "req-\(index) got another line's answer: \(content ?? "none")")
            }
        }
        try Self.judgeBodies(output, in: harness.root)
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchRequest("big")), "the input leaves outgoing last")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchPartial("big")))
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchJournal("big")))
        // OpenAI's error file: the failed lines alone, each as it is in the output.
        try Self.expectErrorsFile(harness, "big")
        let errors = try Self.outputLines(harness.layout.batchErrors("big"))
        #expect(Set(errors.compactMap { $0["custom_id"] as? String }) == Set((0..<count).filter { $0 % 97 == 5 }.map { "req-\($0)" }))
        #expect(errors.count == failing)
        #expect(harness.files(in: harness.layout.incoming).sorted() == ["big.batch.json", "big.errors.jsonl", "big.jsonl"],
                "no line leaves a file of its own")
        #expect(harness.files(in: harness.layout.state).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.isEmpty,
                "lines have no task records")
        let arrivals = try harness.stubArrivals()
        #expect(arrivals.count == count, "each line is sent once (none is retried here)")
        print("batch of \(count) lines: \(String(format: "%.1f", seconds)) s, \(String(format: "%.0f", Double(count) / seconds)) lines/s")
    }

    /// A line's answer is held in memory and handed to the batch's output: no file of its
    /// own appears in `incoming`, not even for a moment, except for an answer past the bound
    /// held (64 KiB), which goes to the line's `.partial` and arrives whole all the same. A
    /// long stream's raw events are not kept at all; an error's body still reaches the line.
    @Test func aLineAnswerMakesNoFileOfItsOwnUnlessItOutgrowsWhatIsHeld() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 16, "max_attempts": 3])
        let created = try CreatedNames(watching: harness.layout.incoming)
        // 0-29 plain, 30-39 streamed, 40-41 plain of about 140 KB, 42-43 streamed of about
        // 20 KB of text in about 400 KB of events, 44-46 refused (400), 47 a 500 and then an answer.
        var lines: [String] = []
        for index in 0..<48 {
            let id = "line-\(index)"
            switch index {
            case 40, 41: lines.append(Self.line(id, stub: ["tokens": 20_000]))
            case 42, 43: lines.append(Self.line(id, stream: true, stub: ["tokens": 3_000]))
            case 44...46: lines.append(Self.line(id, stub: ["status": 400]))
            case 47: lines.append(Self.line(id, stub: ["faults": [["status": 500]]]))
            default: lines.append(Self.line(id, stream: (30..<40).contains(index)))
            }
        }
        try Self.dropBatch(harness, "held", lines)
        let summary = try Self.waitForSummary(harness, "held", timeout: 120)
        #expect(summary["status"] as? String == "completed")
        #expect((summary["request_counts"] as? [String: Any])?["failed"] as? Int == 3)

        let names = try created.drain()
        let lineFiles = Set(names.filter { SpoolLayout.isLineTemporary($0) })
        let outgrown = Set([40, 41].map { SpoolLayout.lineID(batch: "held", entry: $0) + SpoolLayout.partialSuffix })
        #expect(lineFiles == outgrown, "only the answers past 64 KiB had a file: \(lineFiles.sorted())")
        #expect(names.contains("held.jsonl.partial"), "the watch saw the batch's own output created: \(names)")

        let found = Self.byID(try Self.outputLines(harness.layout.batchOutput("held")))
        #expect(found.count == 48)
        for index in 0..<48 {
            let line = found["line-\(index)"] ?? [:]
            let response = line["response"] as? [String: Any]
            if (44...46).contains(index) {
                let error = line["error"] as? [String: Any]
                #expect(error?["code"] as? String == "http", "line-\(index): \(line)")
                #expect((error?["message"] as? String)?.contains("stub answered 400") == true, "the error's body was read: \(line)")
                #expect(response?["status_code"] as? Int == 400)
                continue
            }
            #expect(line["error"] is NSNull, "line-\(index): \(line)")
            let content = Harness.content(of: response?["body"] as? [String: Any] ?? [:]) ?? ""
            #expect(content.hasPrefix("Echo: prompt of line-\(index)"), "line-\(index): \(content.prefix(80))")
            switch index {
            case 40, 41: #expect(content.hasSuffix(" tök19999"), "the whole long answer: \(content.count) characters, ends \(content.suffix(20))")
            case 42, 43: #expect(content.hasSuffix(" tök2999"), "the whole long stream: \(content.count) characters, ends \(content.suffix(20))")
            default: break
            }
        }
        try Self.judgeBodies(Array(found.values), in: harness.root)
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, "held")))
    }

    @Test func anInvalidFileIsRefusedWithItsProblemsLines() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let lines = [Self.line("a"), Self.line("b"), Self.line("a"), Self.line("c"),
                     #"{"custom_id": "d", "url": "/v1/chat/completions", "body": {"model": "m""#,
                     #"{"custom_id": "e", "url": "/v1/nope", "body": {}}"#]
        try Self.dropBatch(harness, "bad", lines)
        try waitUntil("the batch is refused", timeout: 30) {
            FileManager.default.fileExists(atPath: harness.layout.failedBatch("bad"))
        }
        let record = try harness.json(harness.layout.batchErrorRecord("bad"))
        #expect(record["kind"] as? String == "invalid-batch")
        #expect(record["problem_count"] as? Int == 3)
        let problems = try #require(record["problems"] as? [[String: Any]])
        #expect(problems.compactMap { $0["line"] as? Int } == [3, 5, 6])
        #expect((record["message"] as? String)?.contains("line 3, column 1: \"custom_id\" \"a\" is also that of line 1") == true,
                "\(record["message"] ?? "")")
        #expect((problems[1]["message"] as? String)?.hasPrefix("the line is not valid JSON") == true)
        #expect(try harness.stubArrivals().isEmpty, "nothing of an invalid batch is sent")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchRequest("bad")))
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchPartial("bad")))
    }

    /// Request `x` and batch `x` keep a record each: the batch's is `x.jsonl.error.json`, so
    /// neither failure moves the other's record aside.
    @Test func aRequestAndABatchOfOneNameFailApart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("x", Harness.request("refused", stub: ["status": 400]))
        try waitUntil("the request failed", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.failedRequest("x")) }
        try Self.dropBatch(harness, "x", [Self.line("a"), "not json"])
        try waitUntil("the batch is refused", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.failedBatch("x")) }
        #expect(try harness.json(harness.layout.errorRecord("x"))["kind"] as? String != "invalid-batch")
        #expect(try harness.json(harness.layout.batchErrorRecord("x"))["kind"] as? String == "invalid-batch")
        #expect(harness.files(in: harness.layout.superseded).isEmpty, "nothing moved aside")
        let shown = try harness.cli(["show", "x", "--spool", harness.layout.root])
        #expect(shown.stdout.contains(harness.layout.batchErrorRecord("x")), "the batch's record: \(shown.stdout)")
    }

    /// A byte order mark opening the file is skipped as a request file's is: the batch runs,
    /// and line 1 goes to the endpoint without it.
    @Test func aByteOrderMarkOpeningTheFileIsSkipped() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        let lines = (0..<3).map { Self.line("m-\($0)") }
        let hidden = "\(harness.layout.outgoing)/.marked.jsonl.tmp"
        try DurableFile.write([0xEF, 0xBB, 0xBF] + Array((lines.joined(separator: "\n") + "\n").utf8), to: hidden, syncDirectory: false)
        try Syscall.rename(hidden, harness.layout.batchRequest("marked"))
        let summary = try Self.waitForSummary(harness, "marked", timeout: 30)
        #expect(summary["status"] as? String == "completed", "\(summary)")
        let found = Self.byID(try Self.outputLines(harness.layout.batchOutput("marked")))
        #expect(found.count == 3)
        for index in 0..<3 {
            let line = found["m-\(index)"] ?? [:]
            let content = Harness.content(of: (line["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:])
            #expect(line["error"] is NSNull && content?.hasPrefix("Echo: prompt of m-\(index)") == true, "m-\(index): \(line)")
        }
        // The stub reads each body as JSON to echo its prompt: a mark sent with line 1 would not parse.
        #expect(try harness.stubArrivals().map(\.prompt).sorted() == (0..<3).map { "prompt of m-\($0)" })
    }

    @Test func deletingTheInputCancelsTheBatch() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // A first retry waits 30 s: the first lines, refused once, are waiting to retry when
        // the batch is cancelled, and must not hold its end up. (No Retry-After: that would
        // pause the whole endpoint.)
        try harness.startDaemon(config: ["concurrency": 4, "retry_initial_seconds": 30, "retry_max_seconds": 60])
        let count = 300
        try Self.dropBatch(harness, "slow", (0..<count).map { index in
            Self.line("s-\(index)", stub: index < 3 ? ["faults": [["status": 500]]] : ["latency_ms": 150])
        })
        try waitUntil("some lines are done", timeout: 60) {
            ((try? String(contentsOfFile: harness.layout.batchPartial("slow"), encoding: .utf8)) ?? "").split(separator: "\n").count >= 8
        }
        try FileManager.default.removeItem(atPath: harness.layout.batchRequest("slow"))
        let removed = Date()
        let summary = try Self.waitForSummary(harness, "slow", timeout: 20)
        print("cancelled batch ended \(String(format: "%.2f", Date().timeIntervalSince(removed))) s after its input was removed")
        #expect(summary["status"] as? String == "cancelled")
        let output = try Self.outputLines(harness.layout.batchOutput("slow"))
        let found = Self.byID(output)
        #expect(found.count == count, "every line is in the output, cancelled or not")
        let cancelled = output.filter { ($0["error"] as? [String: Any])?["code"] as? String == "batch_cancelled" }
        let succeeded = output.filter { $0["error"] is NSNull }
        #expect(succeeded.count >= 8)
        for index in 0..<3 {
            #expect((found["s-\(index)"]?["error"] as? [String: Any])?["code"] as? String == "batch_cancelled", "s-\(index) was waiting to retry")
        }
        #expect(cancelled.count + succeeded.count == count)
        #expect(cancelled.count > count / 2, "the rest was never sent")
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["completed"] as? Int == succeeded.count)
        #expect(counts["failed"] as? Int == cancelled.count)
        let sent = try harness.stubArrivals().count
        #expect(sent <= succeeded.count + 3 + 4, "beyond the lines that finished, only the three refused and those in flight were sent (sent \(sent))")
        try SDKJudge.expectParses("Batch", [harness.layout.batchSummary("slow")])
        try Self.expectErrorsFile(harness, "slow")
    }

    /// An endpoint with a model of its own rewrites each line's body, read in place from the
    /// batch file (whatever its size), and streamed lines still ask for their usage.
    @Test func anEndpointsModelRewritesEachLine() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "stub", "base_url": harness.stubURL, "model": "other-model"]],
                                         "max_request_bytes": 4096])
        // The file is far larger than max_request_bytes; each line is not.
        let count = 300
        try Self.dropBatch(harness, "rewritten", (0..<count).map { Self.line("r-\($0)", prompt: "prompt of r-\($0) " + String(repeating: "p", count: 100), stream: $0 % 2 == 0) })
        let summary = try Self.waitForSummary(harness, "rewritten", timeout: 120)
        #expect((summary["request_counts"] as? [String: Any])?["completed"] as? Int == count, "\(summary)")
        let output = try Self.outputLines(harness.layout.batchOutput("rewritten"))
        for line in output {
            let body = (line["response"] as? [String: Any])?["body"] as? [String: Any]
            #expect(body?["model"] as? String == "other-model", "\(line)")
            #expect((body?["usage"] as? [String: Any])?["total_tokens"] is Int, "\(line)")
        }
    }

    @Test func linesNotEndedWithinTheLifetimeExpire() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 1, "max_lifetime_seconds": 2])
        let count = 40
        try Self.dropBatch(harness, "late", (0..<count).map { Self.line("l-\($0)", stub: ["latency_ms": 300]) })
        let summary = try Self.waitForSummary(harness, "late", timeout: 60)
        #expect(summary["status"] as? String == "expired")
        #expect(summary["expired_at"] is Int)
        let output = try Self.outputLines(harness.layout.batchOutput("late"))
        let found = Self.byID(output)
        #expect(found.count == count)
        let expired = output.filter { ($0["error"] as? [String: Any])?["code"] as? String == "batch_expired" }
        let succeeded = output.filter { $0["error"] is NSNull }
        #expect(succeeded.count >= 1 && succeeded.count < 10, "about 2 s of 0.3 s lines, one at a time (\(succeeded.count))")
        #expect(expired.count + succeeded.count == count)
        // No line is sent once the lifetime has ended: an expired line that reached the stub
        // was in flight then, or had been tried and was waiting to be tried again.
        // (`created_at` is in whole seconds: one more second of slack.)
        let lifetimeEnd = Double(try #require(summary["created_at"] as? Int)) + 2 + 1
        let expiredPrompts = Set(expired.compactMap { $0["custom_id"] as? String }.map { "prompt of \($0)" })
        let sentLate = try harness.stubArrivals().filter { expiredPrompts.contains($0.prompt) && $0.at > lifetimeEnd }
        #expect(sentLate.isEmpty, "expired lines sent after the lifetime ended (\(lifetimeEnd)): \(sentLate)")
        try SDKJudge.expectParses("Batch", [harness.layout.batchSummary("late")])
        try Self.expectErrorsFile(harness, "late")
    }

    @Test(.enabled(if: DialectRegistry.dialect(url: "/v1/messages") != nil, "the Messages dialect is not registered"))
    func anAnthropicBatchAnswersInAnthropicsShape() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "stub", "base_url": harness.stubURL, "api": "anthropic"]]])
        let count = 1_000
        let lines = (0..<count).map { index -> String in
            let params: [String: Any] = ["model": "messages-stub", "max_tokens": 32, "stream": index % 3 == 0,
                                         "messages": [["role": "user", "content": "prompt of a-\(index)"]]]
            let object: [String: Any] = ["custom_id": "a-\(index)", "params": params]
            return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        }
        try Self.dropBatch(harness, "anthropic", lines)
        let summary = try Self.waitForSummary(harness, "anthropic", timeout: 300)
        #expect(summary["status"] as? String == "completed")
        let path = harness.layout.batchOutput("anthropic")
        let output = try Self.outputLines(path)
        #expect(Self.byID(output).count == count)
        #expect(output.allSatisfy { ($0["result"] as? [String: Any])?["type"] as? String == "succeeded" })
        try Self.expectErrorsFile(harness, "anthropic")
        try SDKJudge.expectParses("MessageBatchIndividualResponse", [path], jsonl: true)
        let messages = try output.map { String(decoding: try JSONSerialization.data(withJSONObject: ($0["result"] as? [String: Any])?["message"] ?? [:]), as: UTF8.self) }
        try Data((messages.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: harness.root + "/messages.jsonl"))
        try SDKJudge.expectParses("Message", [harness.root + "/messages.jsonl"], jsonl: true)
    }

    /// A batch whose lines no endpoint speaks (Anthropic lines, only an OpenAI endpoint):
    /// each line ends `no-endpoint` in the batch's output and the batch ends. Before, each
    /// line was failed as a request file: the batch's input went to `failed/` under a line's
    /// name, dot-named records were left in `failed/` and `state/`, and the batch never ended.
    @Test(.enabled(if: DialectRegistry.dialect(url: "/v1/messages") != nil, "the Messages dialect is not registered"))
    func aBatchWhoseLinesNoEndpointSpeaksEndsWithEachLineFailed() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["endpoints": [["name": "stub", "base_url": harness.stubURL]]])
        let lines = (0..<3).map { index -> String in
            let object: [String: Any] = ["custom_id": "n-\(index)",
                                         "params": ["model": "m", "max_tokens": 8, "messages": [["role": "user", "content": "nobody speaks \(index)"]]]]
            return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        }
        try Self.dropBatch(harness, "unspoken", lines)
        let summary = try Self.waitForSummary(harness, "unspoken", timeout: 60)
        #expect(summary["status"] as? String == "completed")
        let output = Self.byID(try Self.outputLines(harness.layout.batchOutput("unspoken")))
        #expect(Set(output.keys) == ["n-0", "n-1", "n-2"])
        for (id, line) in output {
            let result = line["result"] as? [String: Any]
            #expect(result?["type"] as? String == "errored", "\(id): \(line)")
            #expect("\(line)".contains("no-endpoint") || "\(line)".contains("no endpoint"), "\(id): \(line)")
        }
        #expect(Set(try Self.outputLines(harness.layout.batchErrors("unspoken")).compactMap { $0["custom_id"] as? String }) == ["n-0", "n-1", "n-2"],
                "every line errored: the errors file holds them all")
        #expect(harness.files(in: harness.layout.failed).isEmpty, "\(harness.files(in: harness.layout.failed))")
        #expect(!harness.files(in: harness.layout.state).contains { $0.hasPrefix(".unspoken") }, "\(harness.files(in: harness.layout.state))")
        #expect(!Syscall.isPresent(harness.layout.batchRequest("unspoken")), "the input left outgoing once the batch ended")
    }

    /// kill -9 at random moments over a batch: each line's output appears exactly once, and
    /// each is its own line's answer. CI runs it short; the long run:
    /// `LLMSPOOL_BATCH_KILL_LINES=20000 LLMSPOOL_BATCH_KILLS=30 swift test --filter BatchTests/aKilledDaemon`
    @Test func aKilledDaemonLosesAndRepeatsNoLine() throws {
        let environment = ProcessInfo.processInfo.environment
        let count = Int(environment["LLMSPOOL_BATCH_KILL_LINES"] ?? "") ?? 2_000
        let kills = Int(environment["LLMSPOOL_BATCH_KILLS"] ?? "") ?? 5
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let config: [String: Any] = ["concurrency": 32, "max_attempts": 4]
        try harness.startDaemon(config: config)
        var lines: [String] = []
        for index in 0..<count {
            // Faults the daemon retries through: a 500 then success, a cut stream then success.
            var stub: [String: Any]? = nil
            if index % 50 == 7 { stub = ["faults": [["status": 500]]] }
            if index % 50 == 19 { stub = ["faults": [["cut_after": 2]]] }
            if index % 211 == 3 { stub = ["status": 400] }
            lines.append(Self.line("k-\(index)", stream: index % 4 == 1 || index % 50 == 19, stub: stub))
        }
        try Self.dropBatch(harness, "killed", lines)
        var killed = 0
        var lastLength = 0
        while killed < kills {
            // Each kill lands once the output has grown since the last: the daemon made progress.
            try waitUntil("the output grows", timeout: 120) {
                if FileManager.default.fileExists(atPath: harness.layout.batchSummary("killed")) { return true }
                let length = ((try? FileManager.default.attributesOfItem(atPath: harness.layout.batchPartial("killed")))?[.size] as? Int) ?? 0
                return length > lastLength + 2_000
            }
            if FileManager.default.fileExists(atPath: harness.layout.batchSummary("killed")) { break }
            usleep(UInt32.random(in: 0..<150_000))
            harness.killDaemon()
            killed += 1
            lastLength = ((try? FileManager.default.attributesOfItem(atPath: harness.layout.batchPartial("killed")))?[.size] as? Int) ?? 0
            try harness.startDaemon(config: config)
        }
        let summary = try Self.waitForSummary(harness, "killed", timeout: 600)
        #expect(killed >= min(kills, 2), "the kills landed while the batch ran (\(killed))")
        let resumed = harness.log.components(separatedBy: "batch resumed").count - 1
        #expect(resumed >= min(kills, 2), "each restart resumed the batch from its journal (\(resumed) of \(killed))")
        print("batch of \(count) lines: \(killed) kills, \(resumed) resumptions")
        #expect(summary["status"] as? String == "completed")
        let output = try Self.outputLines(harness.layout.batchOutput("killed"))
        #expect(output.count == count, "one output line per input line, none lost, none repeated")
        let found = Self.byID(output)
        #expect(found.count == count)
        var failed = 0
        for index in 0..<count {
            guard let line = found["k-\(index)"] else {
                Issue.record("k-\(index) has no output line")
                continue
            }
            if index % 211 == 3 {
                failed += 1
                #expect((line["response"] as? [String: Any])?["status_code"] as? Int == 400)
                continue
            }
            let content = Harness.content(of: (line["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:])
            #expect(content?.hasPrefix("Echo: prompt of k-\(index)") == true, "k-\(index): \(line)")
        }
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["failed"] as? Int == failed)
        try Self.judgeBodies(output, in: harness.root)
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, "killed")))
    }
    /// A line the stub fails every time, killed after some of its attempts: after the
    /// restart it has only the attempts it had left, so it ends failed after `max_attempts`
    /// in all, not after `max_attempts` more.
    @Test func aLineRetriedBeforeAKillHasOnlyItsAttemptsLeft() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let maxAttempts = 6
        // A backoff far longer than the test's polling: the kill lands while the line waits.
        let config: [String: Any] = ["concurrency": 4, "max_attempts": maxAttempts, "retry_initial_seconds": 1.5, "retry_max_seconds": 1.5]
        try harness.startDaemon(config: config)
        var lines = [Self.line("doomed", stub: ["status": 500])]
        for index in 0..<3 { lines.append(Self.line("fine-\(index)")) }
        try Self.dropBatch(harness, "retried", lines)
        let journal = harness.layout.batchJournal("retried")
        // The attempts journalled for the doomed line (entry 0): its last record's count.
        func journalled() -> Int {
            let text = (try? String(contentsOfFile: journal, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { record -> Int? in
                let fields = record.split(separator: " ")
                return fields.count == 4 && fields[0] == "a" && fields[1] == "0" ? Int(fields[2]) : nil
            }.last ?? 0
        }
        let before = 3
        try waitUntil("\(before) attempts of the doomed line are journalled", timeout: 60) { journalled() >= before }
        harness.killDaemon()
        let recorded = journalled()
        let sent = try harness.arrivals(of: "prompt of doomed").count
        // An attempt the stub saw but the daemon had not journalled when it died is made
        // again: at most the one in flight.
        #expect(sent - recorded >= 0 && sent - recorded <= 1, "the stub saw \(sent) attempts, the journal has \(recorded)")
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchSummary("retried")))
        try harness.startDaemon(config: config)
        let summary = try Self.waitForSummary(harness, "retried", timeout: 120)
        #expect(summary["status"] as? String == "completed")
        #expect(harness.log.contains("batch resumed"))
        let total = try harness.arrivals(of: "prompt of doomed").count
        #expect(total == maxAttempts + (sent - recorded), "\(total) attempts in all, \(sent) of them before the kill")
        let found = Self.byID(try Self.outputLines(harness.layout.batchOutput("retried")))
        #expect(found.count == 4)
        let doomed = try #require(found["doomed"])
        let error = try #require(doomed["error"] as? [String: Any])
        #expect(error["code"] as? String == "http")
        #expect((error["message"] as? String)?.contains("gave up after \(maxAttempts) attempts") == true, "\(error)")
        #expect((doomed["response"] as? [String: Any])?["status_code"] as? Int == 500)
        for index in 0..<3 { #expect(found["fine-\(index)"]?["error"] is NSNull) }
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["failed"] as? Int == 1 && counts["completed"] as? Int == 3)
    }
}

/// A daemon starting on a shared spool sweeps the leftovers of lines, but not those of a
/// batch another live daemon runs: a plain line's answer past what is held in memory is
/// being written to its `.partial`, a streamed line's text to its result's temporary
/// (`..<batch>.jsonl.<n>.json.tmp`). Before, the starting daemon removed them (the daemon
/// writing them wrote them again from its open descriptors).
@Suite(.serialized) struct SharedLineLeftoverTests {
    @Test func aStartingDaemonKeepsTheLineFilesOfABatchAnotherDaemonRuns() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        _ = try harness.startExtraDaemon("d1", config: SharedBatchTests.config("d1"))
        // Line 0: a plain answer of about 140 KB in 4 KiB pieces 800 ms apart, past the
        // 64 KiB held after about 13 s, whole after about 28 s. Line 1: about 100 KB of
        // streamed text, a token every 2 ms, spilled after about 14 s, whole after about 26 s.
        try BatchTests.dropBatch(harness, "long", [BatchTests.line("long-0", stub: ["tokens": 20_000, "plain_piece_delay_ms": 800]),
                                                   BatchTests.line("long-1", stream: true, stub: ["tokens": 12_000, "token_delay_ms": 2])])
        let files = [harness.layout.partial(SpoolLayout.lineID(batch: "long", entry: 0)),
                     SpoolLayout.temporary(for: harness.layout.result(SpoolLayout.lineID(batch: "long", entry: 1)))]
        try waitUntil("both lines' answers outgrow memory", timeout: 60) { files.allSatisfy(Syscall.isPresent) }
        // Returns once d2 is watching: its leftovers are swept by then.
        _ = try harness.startExtraDaemon("d2", config: SharedBatchTests.config("d2"))
        // Both lines run for several seconds more: the batch has not ended, and both files are still written.
        try #require(!Syscall.isPresent(harness.layout.batchSummary("long")), "the batch still runs")
        for file in files { #expect(Syscall.isPresent(file), "\(file) survives the other daemon's start") }
        let summary = try BatchTests.waitForSummary(harness, "long", timeout: 120)
        #expect(!harness.extraLog("d1").contains("the answer's file was removed while the answer arrived"), "\(harness.extraLog("d1").suffix(2000))")
        #expect((summary["request_counts"] as? [String: Any])?["completed"] as? Int == 2, "\(summary)")
        let found = BatchTests.byID(try BatchTests.outputLines(harness.layout.batchOutput("long")))
        for (id, last) in [("long-0", " tök19999"), ("long-1", " tök11999")] {
            let content = Harness.content(of: (found[id]?["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:]) ?? ""
            #expect(content.hasSuffix(last), "\(id), the whole answer: \(content.count) characters, ends \(content.suffix(20))")
        }
    }
}

/// A batch on a spool two daemons share with leases (as on a network share, here on a local
/// folder): one daemon claims and runs it; killed mid-batch, the other takes the claim
/// over and resumes from the journal, and the output holds exactly one line per custom_id.
@Suite(.serialized) struct SharedBatchTests {
    static func config(_ host: String) -> [String: Any] {
        ["watch_mode": "poll", "poll_interval_seconds": 0.2, "leases": true, "lease_seconds": 3, "host_id": host, "concurrency": 8]
    }

    /// Log lines saying a daemon runs the batch.
    static func runs(_ log: String) -> Int {
        log.components(separatedBy: "batch accepted").count - 1 + log.components(separatedBy: "batch resumed").count - 1
    }

    @Test func theOwnerKilledMidBatchTheOtherFinishesItFromTheJournal() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let daemons = ["d1": try harness.startExtraDaemon("d1", config: Self.config("d1")),
                       "d2": try harness.startExtraDaemon("d2", config: Self.config("d2"))]
        let count = 600
        let lines = (0..<count).map { BatchTests.line("s-\($0)", stub: ["latency_ms": 60]) }
        try BatchTests.dropBatch(harness, "shared", lines)
        // Killed once a part of the output is committed, well before its end.
        try waitUntil("the output grows", timeout: 60) {
            let length = ((try? FileManager.default.attributesOfItem(atPath: harness.layout.batchPartial("shared")))?[.size] as? Int) ?? 0
            return length > 40_000
        }
        let owners = daemons.keys.filter { Self.runs(harness.extraLog($0)) > 0 }
        #expect(owners.count == 1, "one daemon runs the batch at a time: \(owners)")
        let owner = try #require(owners.first)
        let other = owner == "d1" ? "d2" : "d1"
        #expect(!FileManager.default.fileExists(atPath: harness.layout.batchSummary("shared")), "killed before the batch ended")
        let victim = try #require(daemons[owner])
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        let arrivalsAtKill = try harness.stubArrivals().count
        // The lines the journal had committed when the owner died: these must never be sent
        // again (the contract). Lines answered but not yet committed, and those in flight,
        // may be, so their number depends on how far group commit lagged, not on concurrency.
        let journal = try String(contentsOfFile: harness.layout.batchJournal("shared"), encoding: .utf8)
        let committedAtKill = Set(journal.split(separator: "\n").dropFirst().compactMap { record -> Int? in
            let fields = record.split(separator: " ")
            guard fields.count == 5, fields[1].count == 1, "sfce".contains(fields[1]) else { return nil }
            return Int(fields[0])
        })
        #expect(!committedAtKill.isEmpty, "killed after some lines were committed")
        let summary = try BatchTests.waitForSummary(harness, "shared", timeout: 120)
        #expect(harness.extraLog(other).contains("batch resumed"), "the other daemon resumed from the journal: \(harness.extraLog(other).suffix(3000))")
        #expect(summary["status"] as? String == "completed")
        let output = try BatchTests.outputLines(harness.layout.batchOutput("shared"))
        #expect(output.count == count, "one output line per input line, none lost, none repeated")
        let found = BatchTests.byID(output)
        #expect(found.count == count)
        for index in 0..<count {
            let content = Harness.content(of: (found["s-\(index)"]?["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:])
            #expect(content?.hasPrefix("Echo: prompt of s-\(index)") == true, "s-\(index): \(String(describing: found["s-\(index)"]))")
        }
        let arrivals = try harness.stubArrivals().map(\.prompt)
        let repeated = arrivals.count - Set(arrivals).count
        print("shared batch of \(count) lines: owner \(owner) killed after \(arrivalsAtKill) arrivals, \(committedAtKill.count) committed; \(repeated) lines sent again")
        #expect(Set(arrivals).count == count)
        var sent: [String: Int] = [:]
        for prompt in arrivals { sent[prompt, default: 0] += 1 }
        let committedAndSentAgain = committedAtKill.filter { (sent["prompt of s-\($0)"] ?? 0) > 1 }.sorted()
        #expect(committedAndSentAgain.isEmpty, "committed before the kill, then sent again: \(committedAndSentAgain.prefix(10))")
        #expect(repeated <= arrivalsAtKill - committedAtKill.count, "only lines the killed daemon had sent and not committed were sent again")
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, "shared")))
        try BatchTests.judgeBodies(output, in: harness.root)
    }
}
