import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct BatchCoreTests {
    @Test func lineIDsNameTheirBatchAndEntry() throws {
        let id = SpoolLayout.lineID(batch: "my.jsonl.batch", entry: 42)
        let line = try #require(BatchLineRef(id: id))
        #expect(line.batch == "my.jsonl.batch")
        #expect(line.entry == 42)
        #expect(BatchLineRef(id: "q1") == nil, "a request's id is no line's")
        #expect(BatchLineRef(id: "x.jsonl.3") == nil, "line ids are hidden")
        #expect(BatchLineRef(id: ".x.jsonl.three") == nil)
        #expect(BatchLineRef(id: ".x.jsonl.5.6") == nil, "the entry is the last part alone")
        #expect(BatchLineRef(id: ".x.json.5") == nil)
        #expect(BatchLineRef(id: ".x.jsonl.") == nil)
        #expect(BatchLineRef(id: ".jsonl.5") == nil, "too short to hold the suffix after its dot")
        #expect(BatchLineRef(id: ".") == nil)
        #expect(BatchLineRef(id: "") == nil)
        let empty = try #require(BatchLineRef(id: "..jsonl.0"))
        #expect(empty.batch == "" && empty.entry == 0)
        let accented = try #require(BatchLineRef(id: SpoolLayout.lineID(batch: "é.jsonl", entry: 1_000_000)))
        #expect(accented.batch == "é.jsonl" && accented.entry == 1_000_000)
    }

    @Test func aBatchsHookHasItsCounts() {
        let layout = SpoolLayout(root: "/s")
        let report = BatchRunner.EndReport(name: "b", status: "completed", total: 10, succeeded: 9, failed: 1,
                                           outputPath: layout.batchOutput("b"), summaryPath: layout.batchSummary("b"))
        let variables = HookRunner.environment(forBatch: report, layout: layout)
        #expect(variables["LLMSPOOL_BATCH"] == "1")
        #expect(variables["LLMSPOOL_STATUS"] == "failed", "a batch with a failed line runs on_failure")
        #expect(variables["LLMSPOOL_BATCH_TOTAL"] == "10" && variables["LLMSPOOL_BATCH_SUCCEEDED"] == "9" && variables["LLMSPOOL_BATCH_FAILED"] == "1")
        #expect(variables["LLMSPOOL_RESULT"] == "/s/incoming/b.jsonl")
        var all = report
        all.failed = 0
        all.succeeded = 10
        #expect(HookRunner.environment(forBatch: all, layout: layout)["LLMSPOOL_STATUS"] == "done")
    }

    @Test func progressReadsBackAndShowsRateAndETA() throws {
        let progress = BatchProgress(name: "b", total: 1000, succeeded: 190, failed: 10, inFlight: 4, startedAt: 100, updatedAt: 110, cancelled: false)
        #expect(progress.line() == "b: 200/1000 done (10 failed), 4 in flight, 20.0 lines/s, ETA 40 s")
        let object = try #require(JSONObject.parse(progress.json()))
        #expect(BatchProgress(json: object) == progress)
        let fresh = BatchProgress(name: "b", total: 5, succeeded: 0, failed: 0, inFlight: 0, startedAt: 100, updatedAt: 100, cancelled: true)
        #expect(fresh.line() == "b: 0/5 done (0 failed), 0 in flight, 0.0 lines/s, cancelling")
        #expect(!String(decoding: progress.json(), as: UTF8.self).contains("commit_"), "nothing said while its lines can be written")
    }

    /// Lines that cannot be written wait in memory; `status` says why, escaped, and `--json`
    /// carries it back.
    @Test func progressSaysWhyItsLinesCannotBeWritten() throws {
        let progress = BatchProgress(name: "b", total: 10, succeeded: 2, failed: 0, inFlight: 2, startedAt: 100, updatedAt: 110, cancelled: false,
                                     commitProblem: "/s/incoming/b.partial is a folder\n\u{1b}[2J", commitFailures: 7)
        #expect(progress.line().hasSuffix(", its lines cannot be written (7 tries): /s/incoming/b.partial is a folder\\x0a\\x1b[2J"), "\(progress.line())")
        let object = try #require(JSONObject.parse(progress.json()))
        #expect(object["commit_problem"] as? String == "/s/incoming/b.partial is a folder\n\u{1b}[2J")
        #expect(BatchProgress(json: object) == progress)
    }

    /// An end that cannot be published: no rate or ETA, the reason escaped, read back.
    @Test func progressSaysWhyItsEndCannotBePublishedOrItCannotStart() throws {
        var progress = BatchProgress(name: "b", total: 10, succeeded: 9, failed: 1, inFlight: 0, startedAt: 100, updatedAt: 110, cancelled: false)
        progress.publishProblem = "rename /s/incoming/.b.batch.json.tmp -> /s/incoming/b.batch.json: Is a directory (errno 21)\u{1b}"
        progress.publishFailures = 4
        #expect(progress.line() == "b: 10/10 done (1 failed), ended; its end cannot be published (4 tries): "
            + "rename /s/incoming/.b.batch.json.tmp -> /s/incoming/b.batch.json: Is a directory (errno 21)\\x1b")
        let object = try #require(JSONObject.parse(progress.json()))
        #expect(object["publish_failures"] as? Int == 4)
        #expect(BatchProgress(json: object) == progress)
        var unstarted = BatchProgress(name: "b", total: 10, succeeded: 0, failed: 0, inFlight: 0, startedAt: 100, updatedAt: 100, cancelled: false)
        unstarted.startProblem = "rename /s/state/batches/.b.journal.tmp -> /s/state/batches/b.journal: Is a directory (errno 21)"
        unstarted.startFailures = 2
        #expect(unstarted.line() == "b: 0/10 done (0 failed), not started; it cannot be started (2 tries): "
            + "rename /s/state/batches/.b.journal.tmp -> /s/state/batches/b.journal: Is a directory (errno 21)")
        #expect(try BatchProgress(json: #require(JSONObject.parse(unstarted.json()))) == unstarted)
        let blocked = BatchProgress(name: "b", total: 10, succeeded: 2, failed: 0, inFlight: 2, startedAt: 100, updatedAt: 110, cancelled: false,
                                    commitProblem: "full", commitFailures: 1)
        #expect(!blocked.line().contains("ETA"), "no line ends while its lines cannot be written: \(blocked.line())")
    }

    @Test func metricsCountLinesAndBatches() {
        let metrics = Metrics()
        metrics.batchLines("succeeded")
        metrics.batchLines("succeeded")
        metrics.batchLines("expired")
        metrics.batch("completed")
        let text = metrics.render()
        #expect(text.contains("llmspool_batch_lines_total{outcome=\"succeeded\"} 2\n"))
        #expect(text.contains("llmspool_batch_lines_total{outcome=\"expired\"} 1\n"))
        #expect(text.contains("llmspool_batch_lines_total{outcome=\"cancelled\"} 0\n"))
        #expect(text.contains("llmspool_batches_total{status=\"completed\"} 1\n"))
    }

    @Test func theConfigHasTheBatchLimits() throws {
        let config = try Config.parse(Array(#"{"max_batch_lines": 10, "max_batch_bytes": 4096}"#.utf8), source: "test")
        #expect(config.maxBatchLines == 10 && config.maxBatchBytes == 4096)
        #expect(Config().maxBatchLines == 1_000_000 && Config().maxBatchBytes == 2 << 30)
        #expect(throws: ConfigError.self) { try Config.parse(Array(#"{"max_batch_lines": 0}"#.utf8), source: "test") }
        let settings = BatchRunner.Settings(config)
        #expect(settings.limits.maxLines == 10 && settings.limits.maxBytes == 4096)
    }
}
