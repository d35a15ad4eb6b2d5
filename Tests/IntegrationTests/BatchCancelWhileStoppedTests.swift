import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolModel
import Testing

/// A batch whose daemon is stopped (SIGTERM) mid-batch, whose input is then deleted, and
/// whose daemon is started again: no daemon ran it when the input left, so nothing held
/// the input open, and its lines never committed are named from the list of custom_ids
/// kept at acceptance. Every line is in the output once: the committed ones as they were,
/// the rest cancelled.
@Suite(.serialized) struct BatchCancelWhileStoppedTests {
    /// What the batch had when its daemon stopped.
    struct Stopped {
        var harness: Harness
        var count: Int
        var committed: Set<Int>
        /// The output's committed bytes: the lines as they were.
        var committedOutput: [UInt8]
        var sentAtStop: Int
    }

    static func anthropicLine(_ id: String) -> String {
        let params: [String: Any] = ["model": "messages-stub", "max_tokens": 32, "stub": ["latency_ms": 100],
                                     "messages": [["role": "user", "content": "prompt of \(id)"]]]
        let object: [String: Any] = ["custom_id": id, "params": params]
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    static func config(_ kind: BatchKind, _ harness: Harness) -> [String: Any] {
        var config: [String: Any] = ["concurrency": 4]
        if kind == .anthropic { config["endpoints"] = [["name": "stub", "base_url": harness.stubURL, "api": "anthropic"]] }
        return config
    }

    /// The journal's committed output length: the largest output end of its entries.
    static func committedLength(_ journal: String) throws -> Int {
        let text = try String(contentsOfFile: journal, encoding: .utf8)
        return text.split(separator: "\n").dropFirst().compactMap { record -> Int? in
            let fields = record.split(separator: " ")
            guard fields.count == 5, fields[1].count == 1 else { return nil }
            return Int(fields[2])
        }.max() ?? 0
    }

    /// Runs a batch of `count` lines, stops the daemon with some of them committed, then
    /// `tamper`s with the spool while no daemon runs, deletes the input, and starts the
    /// daemon again.
    static func stopDeleteAndStart(_ kind: BatchKind, name: String, count: Int = 200, replacement: [String]? = nil,
                                   tamper: (Harness) throws -> Void = { _ in }) throws -> Stopped {
        let harness = try Harness()
        try harness.startStub()
        try harness.startDaemon(config: config(kind, harness))
        let lines = (0..<count).map { kind == .anthropic ? anthropicLine("\(name)-\($0)") : BatchTests.line("\(name)-\($0)", stub: ["latency_ms": 100]) }
        try BatchTests.dropBatch(harness, name, lines)
        try waitUntil("some lines are committed", timeout: 60) {
            ((try? SharedBatchTakeoverTests.committed(harness.layout.batchJournal(name)))?.count ?? 0) >= 8
        }
        #expect(harness.stopDaemon() == 0, "stopped by SIGTERM")
        let committed = try SharedBatchTakeoverTests.committed(harness.layout.batchJournal(name))
        #expect(committed.count >= 8 && committed.count < count, "stopped mid-batch: \(committed.count)")
        #expect(Syscall.isPresent(harness.layout.batchIDList(name)), "the list of custom_ids is kept while the batch runs")
        let length = try committedLength(harness.layout.batchJournal(name))
        let partial = Array(try Data(contentsOf: URL(fileURLWithPath: harness.layout.batchPartial(name))))
        #expect(partial.count >= length)
        let sentAtStop = try harness.stubArrivals().count
        try tamper(harness)
        if let replacement {
            // Renamed over the old input, as a producer replaces a file: another inode.
            try BatchTests.dropBatch(harness, name, replacement)
        } else {
            try Syscall.unlink(harness.layout.batchRequest(name))
        }
        try harness.startDaemon(config: config(kind, harness))
        return Stopped(harness: harness, count: count, committed: committed, committedOutput: Array(partial.prefix(length)), sentAtStop: sentAtStop)
    }

    /// Every line once, committed ones as they were and the rest cancelled; nothing sent
    /// after the restart; no file of the batch left in `state`.
    static func expectEveryLineOnce(_ stopped: Stopped, name: String, kind: BatchKind) throws {
        let harness = stopped.harness
        try expectOutputHoldsEveryLine(stopped, name: name, kind: kind)
        #expect(try harness.stubArrivals().count == stopped.sentAtStop, "no line is sent once the input is gone")
        // The summary comes first; the input, the list and the journal go after it.
        try waitUntil("the batch's files in state go", timeout: 20) { harness.files(in: harness.layout.batches).isEmpty }
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, name)))
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
        #expect(harness.watchingLines == 2, "ended at start, not after another restart")
    }

    /// The cancelled batch's summary and output: every line once, the committed ones as they
    /// were, the rest cancelled.
    static func expectOutputHoldsEveryLine(_ stopped: Stopped, name: String, kind: BatchKind) throws {
        let harness = stopped.harness
        let summary = try BatchTests.waitForSummary(harness, name, timeout: 60)
        #expect(summary["status"] as? String == "cancelled")
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["total"] as? Int == stopped.count)
        #expect(counts["completed"] as? Int == stopped.committed.count)
        #expect(counts["failed"] as? Int == stopped.count - stopped.committed.count, "\(counts)")
        let path = harness.layout.batchOutput(name)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.starts(with: stopped.committedOutput), "the committed lines are the output's first bytes, unchanged")
        let output = try BatchTests.outputLines(path)
        let found = BatchTests.byID(output)
        #expect(output.count == stopped.count && found.count == stopped.count,
                "one line per input line: \(output.count) lines, \(found.count) ids of \(stopped.count)")
        for index in 0..<stopped.count {
            let line = found["\(name)-\(index)"] ?? [:]
            switch (kind, stopped.committed.contains(index)) {
            case (.openai, true):
                let content = Harness.content(of: (line["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:])
                #expect(line["error"] is NSNull && content?.hasPrefix("Echo: prompt of \(name)-\(index)") == true, "\(name)-\(index): \(line)")
            case (.openai, false):
                #expect((line["error"] as? [String: Any])?["code"] as? String == "batch_cancelled", "\(name)-\(index): \(line)")
                #expect(line["response"] is NSNull)
                #expect(line["id"] as? String == BatchOutputLine.requestID(batch: name, entry: index), "the line's stable id")
            case (.anthropic, let committed):
                #expect((line["result"] as? [String: Any])?["type"] as? String == (committed ? "succeeded" : "canceled"), "\(name)-\(index): \(line)")
            }
        }
    }

    /// A batch's input replaced by another file while no daemon ran it: the old batch ends
    /// first, cancelled with every line in its output (its committed lines are not thrown
    /// away, nor sent again), then the new file runs as a batch of its own, under the same name.
    @Test func aBatchReplacedWhileStoppedEndsCancelledThenTheNewFileRuns() throws {
        // Slow enough that the old batch's end is read before the new one's replaces it.
        let replacement = (0..<12).map { BatchTests.line("new-\($0)", stub: ["latency_ms": 1500]) }
        let stopped = try Self.stopDeleteAndStart(.openai, name: "swapped", replacement: replacement)
        let harness = stopped.harness
        defer { harness.stop() }
        try Self.expectOutputHoldsEveryLine(stopped, name: "swapped", kind: .openai)
        #expect(harness.log.contains("the batch's input was replaced while no daemon ran it"), "\(harness.log.suffix(1500))")
        try SDKJudge.expectParses("Batch", [harness.layout.batchSummary("swapped")])
        try waitUntil("the new file's batch ends", timeout: 90) {
            ((try? harness.json(harness.layout.batchSummary("swapped")))?["request_counts"] as? [String: Any])?["total"] as? Int == 12
        }
        let summary = try harness.json(harness.layout.batchSummary("swapped"))
        #expect(summary["status"] as? String == "completed")
        #expect((summary["request_counts"] as? [String: Any])?["completed"] as? Int == 12)
        let output = try BatchTests.outputLines(harness.layout.batchOutput("swapped"))
        let found = BatchTests.byID(output)
        #expect(output.count == 12 && Set(found.keys) == Set((0..<12).map { "new-\($0)" }), "the new file's lines alone: \(found.keys.sorted())")
        for (id, line) in found {
            let content = Harness.content(of: (line["response"] as? [String: Any])?["body"] as? [String: Any] ?? [:])
            #expect(line["error"] is NSNull && content?.hasPrefix("Echo: prompt of \(id)") == true, "\(id): \(line)")
        }
        let sent = try harness.stubArrivals()
        #expect(sent.count == stopped.sentAtStop + 12, "the old batch's lines are not sent again: \(sent.count) after \(stopped.sentAtStop)")
        try waitUntil("the batch's files in state go", timeout: 20) { harness.files(in: harness.layout.batches).isEmpty }
        #expect(harness.files(in: harness.layout.incoming).sorted() == (try BatchTests.expectErrorsFile(harness, "swapped")))
        #expect(harness.files(in: harness.layout.outgoing).isEmpty)
    }

    @Test func anOpenAIBatchStoppedThenDeletedEndsWithEveryLineCancelledOrAsItWas() throws {
        let stopped = try Self.stopDeleteAndStart(.openai, name: "stopped") { harness in
            // Leftovers of no batch (a crash while a list was written): found and removed.
            try DurableFile.write(Array("x".utf8), to: harness.layout.batchIDList("leftover"))
            try DurableFile.write(Array("x".utf8), to: SpoolLayout.temporary(for: harness.layout.batchIDList("unfinished")))
        }
        defer { stopped.harness.stop() }
        try Self.expectEveryLineOnce(stopped, name: "stopped", kind: .openai)
        #expect(stopped.harness.log.contains("its lines never sent named in its output as cancelled"))
        try SDKJudge.expectParses("Batch", [stopped.harness.layout.batchSummary("stopped")])
    }

    @Test(.enabled(if: DialectRegistry.dialect(url: "/v1/messages") != nil, "the Messages dialect is not registered"))
    func anAnthropicBatchStoppedThenDeletedHasItsUnsentLinesCanceled() throws {
        let stopped = try Self.stopDeleteAndStart(.anthropic, name: "messages")
        defer { stopped.harness.stop() }
        try Self.expectEveryLineOnce(stopped, name: "messages", kind: .anthropic)
        try SDKJudge.expectParses("MessageBatchIndividualResponse", [stopped.harness.layout.batchOutput("messages")], jsonl: true)
    }

    /// Without a usable list (one that could not be written, as on a full disk, or damaged)
    /// the batch ends as it did before lists were kept: its committed lines, the rest
    /// counted as not completed, and the log says why.
    @Test(arguments: ["removed", "cut short", "another file's"])
    func withoutAUsableListTheCommittedLinesAreAllTheOutputHas(damage: String) throws {
        let stopped = try Self.stopDeleteAndStart(.openai, name: "unlisted") { harness in
            let list = harness.layout.batchIDList("unlisted")
            switch damage {
            case "removed":
                try Syscall.unlink(list)
            case "cut short":
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: list)))
                try DurableFile.write(Array(bytes.prefix(bytes.count / 2)), to: list)
            default:
                // The same ids, read from a file of another inode and fingerprint.
                var text = try String(contentsOfFile: list, encoding: .utf8)
                let trailer = try #require(text.range(of: "llmspool-batch-ids-of "))
                text.replaceSubrange(trailer.lowerBound..<text.endIndex, with: "llmspool-batch-ids-of 200 1 2 3 4 - -\n")
                try DurableFile.write(Array(text.utf8), to: list)
            }
        }
        let harness = stopped.harness
        defer { harness.stop() }
        let summary = try BatchTests.waitForSummary(harness, "unlisted", timeout: 60)
        #expect(summary["status"] as? String == "cancelled")
        let counts = try #require(summary["request_counts"] as? [String: Any])
        #expect(counts["total"] as? Int == stopped.count && counts["completed"] as? Int == stopped.committed.count)
        let output = try BatchTests.outputLines(harness.layout.batchOutput("unlisted"))
        #expect(output.count == stopped.committed.count && BatchTests.byID(output).count == stopped.committed.count)
        #expect(output.allSatisfy { $0["error"] is NSNull })
        let log = harness.log
        #expect(log.contains("it ends cancelled with the lines it had"), "\(log.suffix(1500))")
        let reason = damage == "removed" ? "its custom_ids were not kept"
            : damage == "cut short" ? "without its end" : "it was read from another file under the batch's name"
        #expect(log.contains(reason), "\(damage): \(log.suffix(1500))")
        try waitUntil("the batch's files in state go", timeout: 20) { harness.files(in: harness.layout.batches).isEmpty }
    }
}
