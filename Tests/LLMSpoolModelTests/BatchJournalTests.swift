import Foundation
import Testing
@testable import LLMSpoolModel

@Suite struct BatchJournalTests {
    let input = FileIdentity(device: 1, inode: 7, size: 900, modifiedNanoseconds: 5, bornNanoseconds: 3, contentHash: nil)

    func journal(lines: Int = 4, entries: [BatchJournal.Entry]) -> [UInt8] {
        BatchJournal.encode(BatchJournal.Header(kind: .openai, lines: lines, createdAt: 1000, input: input, endpoint: "/v1/chat/completions")) + entries.flatMap(BatchJournal.encode)
    }

    @Test func replayGivesTheCommittedLinesCountsAndLength() throws {
        let bytes = journal(entries: [.init(entry: 2, code: UInt8(ascii: "s"), outputEnd: 50, inputTokens: 7, outputTokens: 3),
                                      .init(entry: 0, code: UInt8(ascii: "f"), outputEnd: 90)])
        let replayed = try #require(BatchJournal.replay(bytes))
        #expect(replayed.header.input == input)
        #expect(replayed.header.endpoint == "/v1/chat/completions")
        #expect(replayed.header.lines == 4)
        #expect(replayed.committed.contains(2) && replayed.committed.contains(0) && !replayed.committed.contains(1))
        #expect(replayed.committed.count == 2)
        #expect(replayed.outputLength == 90)
        #expect(replayed.counts.succeeded == 1 && replayed.counts.failed == 1 && replayed.counts.inputTokens == 7)
        #expect(replayed.validLength == bytes.count)
    }

    @Test func aTornLastRecordIsNotAnEntry() throws {
        let whole = journal(entries: [.init(entry: 1, code: UInt8(ascii: "s"), outputEnd: 40)])
        for cut in 1..<BatchJournal.encode(BatchJournal.Entry(entry: 3, code: UInt8(ascii: "s"), outputEnd: 80)).count {
            let torn = whole + Array(BatchJournal.encode(BatchJournal.Entry(entry: 3, code: UInt8(ascii: "s"), outputEnd: 80)).prefix(cut))
            let replayed = try #require(BatchJournal.replay(torn))
            #expect(replayed.committed.count == 1)
            #expect(!replayed.committed.contains(3))
            #expect(replayed.outputLength == 40)
            #expect(replayed.validLength == whole.count)
        }
    }

    @Test func aRepeatedOrOutOfRangeEntryCountsOnce() throws {
        let bytes = journal(lines: 2, entries: [.init(entry: 1, code: UInt8(ascii: "s"), outputEnd: 10),
                                                .init(entry: 1, code: UInt8(ascii: "s"), outputEnd: 20),
                                                .init(entry: 9, code: UInt8(ascii: "s"), outputEnd: 30)])
        let replayed = try #require(BatchJournal.replay(bytes))
        #expect(replayed.committed.count == 1)
        #expect(replayed.counts.succeeded == 1)
    }

    @Test func aBrokenHeaderIsNoJournal() {
        #expect(BatchJournal.replay([]) == nil)
        #expect(BatchJournal.replay(Array("llmspool-batch 1 openai".utf8)) == nil)
        #expect(BatchJournal.replay(Array("something else\n".utf8)) == nil)
    }

    @Test func recoveryDecisions() throws {
        let partial = try #require(BatchJournal.replay(journal(entries: [.init(entry: 0, code: UInt8(ascii: "s"), outputEnd: 40)])))
        let all = try #require(BatchJournal.replay(journal(lines: 1, entries: [.init(entry: 0, code: UInt8(ascii: "s"), outputEnd: 40)])))
        let other = FileIdentity(device: 1, inode: 8, size: 900, modifiedNanoseconds: 5)
        #expect(BatchRecovery.decide(journal: nil, input: input, partialLength: nil) == .fresh)
        #expect(BatchRecovery.decide(journal: partial, input: other, partialLength: 40) == .replaced(partial), "a new file under the name")
        #expect(BatchRecovery.decide(journal: partial, input: input, partialLength: 55) == .resume(partial), "cut back to 40")
        #expect(BatchRecovery.decide(journal: partial, input: input, partialLength: 39) == .fresh, "committed output lost")
        #expect(BatchRecovery.decide(journal: partial, input: input, partialLength: nil) == .fresh)
        #expect(BatchRecovery.decide(journal: all, input: input, partialLength: 40) == .publish(all, outputPublished: false))
        #expect(BatchRecovery.decide(journal: all, input: input, partialLength: 39) == .fresh, "a short output is never published as complete")
        #expect(BatchRecovery.decide(journal: all, input: input, partialLength: nil) == .publish(all, outputPublished: true))
        #expect(BatchRecovery.decide(journal: all, input: nil, partialLength: nil) == .publish(all, outputPublished: true))
        #expect(BatchRecovery.decide(journal: partial, input: nil, partialLength: 40) == .cancelled(partial))
        #expect(BatchRecovery.decide(journal: all, input: other, partialLength: nil) == .replaced(all),
                "a finished batch replaced before its end was published ends as it was, then the new file starts")
        #expect(BatchRecovery.decide(journal: partial, input: other, partialLength: nil) == .replaced(partial),
                "replaced, whatever its output: the old batch's end decides what of it is published")
    }

    @Test func lineSetCounts() {
        var set = BatchLineSet(count: 130)
        for line in [0, 63, 64, 129, 129, 130, -1] { set.insert(line) }
        #expect(set.count == 4)
        #expect(set.contains(129) && !set.contains(130) && !set.contains(1))
    }

    /// Batch b with every line committed, its output `output` in its `.partial`, and the plan
    /// of its end.
    static func endOfBatch(_ layout: SpoolLayout, output: String, hasFailedLines: Bool,
                           staleErrors: Bool = false) -> (MemoryFiles, [PublicationStep], FileIdentity?) {
        let files = MemoryFiles()
        files.create(layout.batchRequest("b"), "{}\n")
        files.create(layout.batchPartial("b"), output)
        files.create(layout.batchJournal("b"), "journal")
        files.create(layout.batchIDList("b"), "ids")
        if staleErrors { files.create(layout.batchErrors("b"), "stale\n") }
        let identity = files.files[layout.batchRequest("b")].map(MemoryFiles.identity)
        return (files, PublicationPlan.batchEnd(name: "b", input: layout.batchRequest("b"), identity: identity, summary: Array("summary".utf8),
                                                outputPublished: false, hasFailedLines: hasFailedLines, layout: layout), identity)
    }

    /// The end of a batch stopped after every step, then restarted as the daemon does: the
    /// output, its errors file (with failed lines), then the summary, each exactly once, and
    /// the input and journal gone.
    @Test(arguments: [false, true]) func aCrashAfterAnyStepOfTheEndLeavesOneOutputAndSummary(hasFailedLines: Bool) throws {
        let layout = SpoolLayout(root: "spool")
        let good = #"{"custom_id":"a","error":null}"#
        let bad = #"{"custom_id":"b","error":{"code":"x","message":"y"}}"#
        let output = hasFailedLines ? "\(good)\n\(bad)\n" : "\(good)\n"
        // An errors file of an earlier batch of the name goes when this one has none.
        func build() -> (MemoryFiles, [PublicationStep], FileIdentity?) {
            Self.endOfBatch(layout, output: output, hasFailedLines: hasFailedLines, staleErrors: true)
        }
        let (_, steps, _) = build()
        for stop in 0...steps.count {
            let (files, steps, identity) = build()
            let counter = StepCounter()
            _ = PublicationExecutor(files: files, beforeStep: { index, _ in
                counter.value = index
                return index < stop
            }).run(steps)
            #expect(files.files[layout.batchJournal("b")] != nil || files.files[layout.batchIDList("b")] == nil,
                    "the list of custom_ids never outlives the journal (stop \(stop))")
            if files.files[layout.batchSummary("b")] != nil {
                #expect(files.text(layout.batchErrors("b")) == (hasFailedLines ? "\(bad)\n" : nil), "the errors file comes before the summary (stop \(stop))")
            }
            // Restart: the journal says every line is committed; where the output is decides the rest.
            if files.files[layout.batchJournal("b")] != nil {
                let published = files.files[layout.batchPartial("b")] == nil
                if files.files[layout.batchSummary("b")] == nil || !published || files.files[layout.batchRequest("b")] != nil {
                    #expect(files.files[layout.batchSummary("b")] == nil || published, "the summary is never before the output (stop \(stop))")
                }
                let rest = PublicationPlan.batchEnd(name: "b", input: layout.batchRequest("b"), identity: identity, summary: Array("summary".utf8),
                                                    outputPublished: published, hasFailedLines: hasFailedLines, layout: layout)
                guard case .completed = PublicationExecutor(files: files).run(rest) else {
                    Issue.record("the rest of the end failed after stop \(stop)")
                    continue
                }
            }
            #expect(files.text(layout.batchOutput("b")) == output, "stop \(stop)")
            #expect(files.text(layout.batchErrors("b")) == (hasFailedLines ? "\(bad)\n" : nil), "stop \(stop)")
            #expect(files.text(layout.batchSummary("b")) == "summary")
            #expect(files.files[layout.batchPartial("b")] == nil)
            #expect(files.files[layout.batchRequest("b")] == nil)
            #expect(files.files[layout.batchJournal("b")] == nil)
            #expect(files.files[layout.batchIDList("b")] == nil)
        }
    }

    /// The end stopped after any step once the summary is out, its consumer then taking the
    /// output, errors file and summary (it waits for the summary alone), then restarted: the
    /// end finishes without publishing anything again. Before, the summary appeared a second
    /// time, alone, naming files its consumer had taken.
    @Test func anEndRunAgainAfterItsConsumerTookTheOutputPublishesNothingAgain() throws {
        let layout = SpoolLayout(root: "spool")
        let output = #"{"custom_id":"b","error":{"code":"x","message":"y"}}"# + "\n"
        func build() -> (MemoryFiles, [PublicationStep], FileIdentity?) { Self.endOfBatch(layout, output: output, hasFailedLines: true) }
        let (_, steps, _) = build()
        var restarted = 0
        for stop in 0...steps.count {
            let (files, steps, identity) = build()
            _ = PublicationExecutor(files: files, beforeStep: { index, _ in index < stop }).run(steps)
            guard files.files[layout.batchSummary("b")] != nil, files.files[layout.batchJournal("b")] != nil else { continue }
            for path in [layout.batchOutput("b"), layout.batchErrors("b"), layout.batchSummary("b")] { _ = try files.unlinkIfPresent(path) }
            let taken = files.files[layout.batchOutput("b")] == nil
            let rest = PublicationPlan.batchEnd(name: "b", input: layout.batchRequest("b"), identity: identity, summary: Array("summary".utf8),
                                                outputPublished: true, outputTaken: taken, hasFailedLines: true, layout: layout)
            guard case .completed = PublicationExecutor(files: files).run(rest) else {
                Issue.record("the rest of the end failed after stop \(stop)")
                continue
            }
            restarted += 1
            #expect(files.files[layout.batchSummary("b")] == nil, "the summary is not published again (stop \(stop))")
            #expect(files.files[layout.batchErrors("b")] == nil, "stop \(stop)")
            #expect(files.files[layout.batchJournal("b")] == nil && files.files[layout.batchRequest("b")] == nil, "stop \(stop)")
        }
        #expect(restarted >= 2, "stops after the summary and before the journal went: \(restarted)")
    }

    /// An end that failed after its summary was written (the input could not be removed)
    /// and is tried again: only the input, the list and the journal go; the output, errors
    /// file and summary the consumer may already have read are left as they are.
    @Test func anEndTriedAgainAfterItsSummaryWasWrittenOnlyRemovesWhatIsLeft() throws {
        let layout = SpoolLayout(root: "spool")
        let output = #"{"custom_id":"b","error":{"code":"x","message":"y"}}"# + "\n"
        let (files, steps, identity) = Self.endOfBatch(layout, output: output, hasFailedLines: true)
        let summaryStep = try #require(steps.firstIndex(of: .writeFile(layout.batchSummary("b"), Array("summary".utf8))))
        _ = PublicationExecutor(files: files, beforeStep: { index, _ in index <= summaryStep }).run(steps)
        #expect(files.files[layout.batchSummary("b")] != nil && files.files[layout.batchRequest("b")] != nil)
        let again = PublicationPlan.batchEnd(name: "b", input: layout.batchRequest("b"), identity: identity, summary: Array("later".utf8),
                                             outputPublished: true, summaryPublished: true, hasFailedLines: true, layout: layout)
        #expect(!again.contains { if case .writeFile = $0 { true } else if case .writeFailedLines = $0 { true } else { false } },
                "nothing is written again: \(again)")
        guard case .completed = PublicationExecutor(files: files).run(again) else {
            Issue.record("the rest of the end failed")
            return
        }
        #expect(files.files[layout.batchSummary("b")]?.bytes == Array("summary".utf8), "the first summary stays")
        #expect(files.files[layout.batchOutput("b")] != nil && files.files[layout.batchErrors("b")] != nil)
        #expect(files.files[layout.batchJournal("b")] == nil && files.files[layout.batchRequest("b")] == nil
                && files.files[layout.batchIDList("b")] == nil)
    }

    /// The end of a batch whose `.partial` was removed before it got its name, stopped after
    /// any step and run again: the summary is written (once), an earlier batch's errors file
    /// of the name goes, nothing is read from or written to the output's name, and the input,
    /// list and journal go.
    @Test func anEndWhoseOutputWasLostWritesItsSummaryAndNothingAtTheOutputsName() throws {
        let layout = SpoolLayout(root: "spool")
        func build() -> (MemoryFiles, [PublicationStep]) {
            let (files, _, identity) = Self.endOfBatch(layout, output: "", hasFailedLines: true, staleErrors: true)
            _ = try? files.unlinkIfPresent(layout.batchPartial("b"))
            return (files, PublicationPlan.batchEnd(name: "b", input: layout.batchRequest("b"), identity: identity, summary: Array("summary".utf8),
                                                    outputPublished: true, outputLost: true, hasFailedLines: true, layout: layout))
        }
        let (_, steps) = build()
        #expect(!steps.contains { if case .writeFailedLines = $0 { true } else if case .rename = $0 { true } else { false } }, "\(steps)")
        for stop in 0...steps.count {
            let (files, steps) = build()
            _ = PublicationExecutor(files: files, beforeStep: { index, _ in index < stop }).run(steps)
            guard case .completed = PublicationExecutor(files: files).run(steps) else {
                Issue.record("the rest of the end failed after stop \(stop)")
                continue
            }
            #expect(files.text(layout.batchSummary("b")) == "summary", "stop \(stop)")
            #expect(files.files[layout.batchErrors("b")] == nil && files.files[layout.batchOutput("b")] == nil, "stop \(stop)")
            #expect(files.files[layout.batchRequest("b")] == nil && files.files[layout.batchJournal("b")] == nil
                    && files.files[layout.batchIDList("b")] == nil, "stop \(stop)")
        }
    }

    /// A summary of a lost output names neither an output nor an errors file and says why in
    /// OpenAI's `errors` list; any other names both and has no errors.
    @Test(arguments: [false, true]) func aSummaryOfALostOutputSaysSo(lost: Bool) throws {
        var counts = BatchCounts()
        counts.succeeded = 1
        counts.failed = 1
        var summary = BatchSummary(name: "b", status: .completed, endpoint: "/v1/chat/completions", total: 2,
                                   counts: counts, createdAt: 1, endedAt: 2, inputFile: "in", outputFile: "out.jsonl")
        summary.outputLost = lost
        let object = try #require(try JSONSerialization.jsonObject(with: Data(summary.encoded())) as? [String: Any])
        #expect((object["output_file_id"] as? String) == (lost ? nil : "out.jsonl"))
        #expect((object["error_file_id"] as? String) == (lost ? nil : "out.errors.jsonl"))
        let errors = (object["errors"] as? [String: Any])?["data"] as? [[String: Any]]
        #expect(errors?.count == (lost ? 1 : nil))
        #expect(errors?.first?["code"] as? String == (lost ? "output_removed" : nil))
        #expect(BatchSummary.end(of: summary.encoded()) == BatchSummary.End(status: "completed", total: 2, completed: 1, failed: 1))
    }

    @Test func anOutputLineFailedIsOneWithAnErrorOrAResultNotSucceeded() {
        func failed(_ text: String) -> Bool { Array(text.utf8).withUnsafeBytes { BatchOutputLine.isFailed($0) } }
        #expect(!failed(#"{"id":"batch_req_1","custom_id":"a","response":{"status_code":200},"error":null}"#))
        #expect(failed(#"{"id":"batch_req_1","custom_id":"a","response":null,"error":{"code":"batch_cancelled","message":"m"}}"#))
        #expect(!failed(#"{"custom_id":"a","result":{"type":"succeeded","message":{}}}"#))
        #expect(failed(#"{"custom_id":"a","result":{"type":"errored","error":{}}}"#))
        #expect(failed(#"{"custom_id":"a","result":{"type":"canceled"}}"#))
        #expect(failed("not json"), "a line that cannot be read is shown")
        // An answer as deep as the daemon reads one, two levels down in its line: read, not shown.
        let deepest = String(repeating: "[", count: 127) + String(repeating: "]", count: 127)
        let answer = #"{"choices":\#(deepest)}"#
        #expect((try? RawJSON.parse(Array(answer.utf8))) != nil, "the deepest answer read")
        #expect(!failed(#"{"custom_id":"a","response":{"status_code":200,"body":\#(answer)},"error":null}"#))
        #expect(!failed(#"{"custom_id":"a","result":{"type":"succeeded","message":\#(answer)}}"#))
    }

    @Test func aRejectionMovesTheFileAfterItsRecordAndKeepsAnEarlierOne() throws {
        let layout = SpoolLayout(root: "spool")
        let files = MemoryFiles()
        files.create(layout.batchRequest("b"), "bad\n")
        files.create(layout.batchErrorRecord("b"), "old record")
        let identity = files.files[layout.batchRequest("b")].map(MemoryFiles.identity)
        let steps = PublicationPlan.batchRejection(name: "b", input: layout.batchRequest("b"), identity: identity, errorRecord: Array("record".utf8), layout: layout)
        guard case .completed = PublicationExecutor(files: files).run(steps) else { Issue.record("the rejection failed"); return }
        #expect(files.text(layout.failedBatch("b")) == "bad\n")
        #expect(files.text(layout.batchErrorRecord("b")) == "record")
        #expect(files.text("\(layout.superseded)/1.b.jsonl.error.json") == "old record")
        let record = try #require(steps.firstIndex(of: .writeFile(layout.batchErrorRecord("b"), Array("record".utf8))))
        let move = try #require(steps.firstIndex { if case .moveIfSame = $0 { return true }; return false })
        #expect(record < move)
    }

    @Test func batchNamesAreClassified() {
        #expect(RequestName.classify("b.jsonl") == .batch(name: "b"))
        #expect(RequestName.classify(".b.jsonl") == .ignored)
        #expect(RequestName.classify("-b.jsonl") == .unusable(reason: "the id starts with a dash"))
        #expect(RequestName.classify("x.batch.json") == .unusable(reason: "names ending in .batch.json are reserved for batch summaries"))
        #expect(RequestName.classify("x.jsonl.json") == .unusable(reason: "ids ending in .jsonl are reserved for batch outputs"))
        // A prompt file's id is its name without .md: x.batch.md would answer into x.batch.json.
        for name in ["x.batch.md", "x.batch.txt"] {
            #expect(RequestName.classify(name) == .unusable(reason: "ids ending in .batch are reserved: their result would be a batch's summary, incoming/x.batch.json"), "\(name)")
        }
        #expect(RequestName.classify("x.batches.md") == .request(id: "x.batches"))
        #expect(RequestName.classify(".jsonl") == .ignored)
        #expect(SpoolLayout.isLineTemporary(PublicationPlan.name(of: SpoolLayout(root: "s").partial(SpoolLayout.lineID(batch: "b", entry: 3)))))
        #expect(!SpoolLayout.isLineTemporary("b.jsonl.partial"))
    }

    /// A line's leftovers name their batch (a shared spool keeps those of a batch another
    /// daemon runs); the temporaries of a batch's own files are no line's.
    @Test func aLinesLeftoverNamesItsBatch() {
        let layout = SpoolLayout(root: "s")
        let id = SpoolLayout.lineID(batch: "night.v2", entry: 12)
        #expect(SpoolLayout.batchOfLineTemporary(PublicationPlan.name(of: layout.partial(id))) == "night.v2")
        #expect(SpoolLayout.batchOfLineTemporary(PublicationPlan.name(of: SpoolLayout.temporary(for: layout.incoming + "/" + id))) == "night.v2")
        // A streamed line's text goes to its result's temporary (`Transfer.spillPath`).
        #expect(SpoolLayout.batchOfLineTemporary(PublicationPlan.name(of: SpoolLayout.temporary(for: layout.result(id)))) == "night.v2")
        #expect(SpoolLayout.batchOfOwnTemporary(PublicationPlan.name(of: SpoolLayout.temporary(for: layout.batchErrors("night.v2")))) == "night.v2")
        #expect(SpoolLayout.batchOfOwnTemporary(PublicationPlan.name(of: SpoolLayout.temporary(for: layout.batchSummary("b")))) == "b")
        #expect(SpoolLayout.batchOfOwnTemporary(PublicationPlan.name(of: SpoolLayout.temporary(for: layout.result("b"))))  == nil)
        #expect(SpoolLayout.batchOfOwnTemporary(".batch.json.tmp") == nil)
        for name in [PublicationPlan.name(of: SpoolLayout.temporary(for: layout.batchErrors("b"))),
                     PublicationPlan.name(of: SpoolLayout.temporary(for: layout.batchSummary("b"))),
                     PublicationPlan.name(of: SpoolLayout.temporary(for: layout.batchPartial("b"))),
                     ".b.jsonl.partial", ".jsonl.3.partial", ".b.jsonl.x3.partial", ".b.jsonl.3", "b.jsonl.3.partial", ".b.jsonl..partial",
                     // Request x.jsonl.3's result and record temporaries: its lease's, not batch x's.
                     PublicationPlan.name(of: SpoolLayout.temporary(for: layout.result("x.jsonl.3")))] {
            #expect(SpoolLayout.batchOfLineTemporary(name) == nil, "\(name)")
        }
    }

    /// A held file's copy is nobody's leftover while it is written, and the sweeps' once untouched.
    @Test func aHeldFilesCopyIsNoLinesOrRequestsLeftoverAndIsSweptOnlyOnceStale() {
        let copy = PublicationPlan.name(of: SpoolLayout.heldCopyTemporary(in: "s/incoming", unique: "41.977"))
        #expect(copy == ".held-copy.41.977.tmp")
        #expect(!SpoolLayout.isLineTemporary(copy))
        #expect(SpoolLayout.isHeldCopyTemporary(copy))
        #expect(!SpoolLayout.isHeldCopyTemporary(PublicationPlan.name(of: SpoolLayout.temporary(for: "s/incoming/b.jsonl.partial"))))
        #expect(!SpoolLayout.isHeldCopyLeftover(copy, modified: 1000, now: 1000 + SpoolLayout.heldCopyLeftoverSeconds))
        #expect(SpoolLayout.isHeldCopyLeftover(copy, modified: 1000, now: 1001 + SpoolLayout.heldCopyLeftoverSeconds))
        #expect(!SpoolLayout.isHeldCopyLeftover(".b.jsonl.partial.tmp", modified: 0, now: 1e9))
    }
}
