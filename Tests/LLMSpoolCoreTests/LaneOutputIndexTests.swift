import Foundation
import Testing
@testable import LLMSpoolCore

/// A remote batch's downloaded output read back for the members of one group: a line is a
/// member's only when its custom_id is that member's id, whatever else the file holds.
@Suite struct LaneOutputIndexTests {
    func line(_ customID: String, content: String) -> String {
        #"{"id":"batch_req_1","custom_id":"\#(customID)","response":{"status_code":200,"request_id":"req_1","body":{"object":"chat.completion","choices":[{"message":{"content":"\#(content)"}}]}},"error":null}"#
    }

    @Test func anOutputLineNamingAnotherBatchsLineIsNoMembersAnswer() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lane-index-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/g.output.jsonl"
        let text = [
            line(".other.jsonl.0", content: "for another batch"),
            line(".mine.jsonl.0", content: "mine"),
            "{not json",
            line(".mine.jsonl.0", content: "a second line for the same id"),
            line("mine.jsonl.1", content: "a look-alike without the dot"),
        ].joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let index = try LaneOutputIndex(paths: [path], members: [".mine.jsonl.0", ".mine.jsonl.1"]) { line in
            let read = try LaneOutputLine.read(line)
            return (read.customID, read.result)
        }
        #expect(index.problems.count == 1 && index.problems[0].contains("line 3") && index.unreadable == 1, "\(index.problems)")
        #expect(index.strangers == 2 && index.firstStranger?.contains("line 1: custom_id .other.jsonl.0") == true,
                "lines for no member are counted for the log: \(index.strangers) \(index.firstStranger ?? "none")")
        #expect(index.repeats == 1)
        #expect(try index.line(of: ".other.jsonl.0") == nil && index.places.count == 1, "only members are indexed")

        let mine = try #require(try index.line(of: ".mine.jsonl.0"))
        let read = try LaneOutputLine.read(mine)
        #expect(read.customID == ".mine.jsonl.0")
        guard case .succeeded(_, _, let body) = read.result else {
            Issue.record("the member's line is not a success: \(read.result)")
            return
        }
        #expect(String(decoding: body, as: UTF8.self).contains("\"mine\""), "the first line of an id counts")

        // The member with no line of its own gets none of the others: it is retried live.
        #expect(try index.line(of: ".mine.jsonl.1") == nil)
        let verdict = LaneMemberVerdict.decide(line: try index.line(of: ".mine.jsonl.1").map { try LaneOutputLine.read($0).result },
                                               batchStatus: "completed", batch: "batch_1")
        guard case .failed(let message) = verdict else {
            Issue.record("a member without a line: \(verdict)")
            return
        }
        #expect(message.contains("no line for this request"))
    }

    /// A file of a million unreadable lines costs a count, not a string each: the first
    /// are kept for the log.
    @Test func unreadableLinesAreCountedAndOnlyTheFirstKept() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lane-index-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/g.output.jsonl"
        try Data((line(".mine.jsonl.0", content: "mine") + "\n" + String(repeating: "x\n", count: 100_000)).utf8).write(to: URL(fileURLWithPath: path))
        let index = try LaneOutputIndex(paths: [path], members: [".mine.jsonl.0"]) { line in
            let read = try LaneOutputLine.read(line)
            return (read.customID, read.result)
        }
        #expect(index.unreadable == 100_000)
        #expect(index.problems.count == LaneOutputIndex.problemsKept && index.problems[0].contains("line 2"), "\(index.problems.prefix(2))")
        #expect(try index.line(of: ".mine.jsonl.0") != nil)
    }
}
