import Foundation
import Testing
@testable import LLMSpoolModel

/// The form in which the background lane holds a batch file's line while it waits and
/// while its group is sent: its offsets and its batch's shared part, from which its task
/// is read back; and the whole task for everything that form cannot give back exactly.
@Suite struct LaneMemberTests {
    static let identity = FileIdentity(device: 3, inode: 77, size: 4096, modifiedNanoseconds: 1_700_000_000_000_000_000, contentHash: 9)
    static let accepted = Date(timeIntervalSince1970: 1_700_000_000)
    static let path = "/spool/outgoing/night.jsonl"

    static func openAILine(_ id: String, model: String = "m") -> [UInt8] {
        Array(#"{"custom_id":"\#(id)","method":"POST","url":"/v1/chat/completions","completion_window":"24h","body":{"model":"\#(model)","messages":[{"role":"user","content":"q \"é\""}],"max_tokens":7}}"#.utf8)
    }

    static func anthropicLine(_ id: String) -> [UInt8] {
        Array(#"{"custom_id":"\#(id)","params":{"model":"stub-messages","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}}"#.utf8)
    }

    /// The task the batch runner makes of the line at `offset`: `BatchLine.read`'s summary,
    /// the batch's input and identity, a fresh history from the batch's acceptance.
    static func fed(_ bytes: [UInt8], at offset: Int, entry: Int = 1, identity: FileIdentity = identity) throws -> TaskDescriptor {
        let read = try BatchLine.read(bytes, at: offset, fileSize: Int(identity.size)).get()
        var task = TaskDescriptor(id: SpoolLayout.lineID(batch: "night", entry: entry), requestPath: path, summary: read.summary,
                                  identity: identity, history: TaskHistory(firstSeen: accepted))
        task.line = offset..<(offset + bytes.count)
        return task
    }

    static var batch: LaneLineBatch { LaneLineBatch(name: "night", inputPath: path, identity: identity, firstSeen: accepted) }

    @Test(arguments: [LaneMemberTests.openAILine("a-1"), LaneMemberTests.anthropicLine("b-1")])
    func aFedLineIsHeldByItsOffsetsAndReadBackAsTheSameTask(bytes: [UInt8]) throws {
        let task = try Self.fed(bytes, at: 1234)
        let member = LaneMember.holding(task, batch: Self.batch)
        guard case .line(let line) = member else {
            Issue.record("a fresh line is held as its offsets, not as \(member)")
            return
        }
        #expect(line.line == 1234..<(1234 + bytes.count) && line.body == task.summary.body)
        #expect(member.id == task.id && member.path == Self.path && member.body == task.summary.body && member.identity == Self.identity)
        #expect(line.task(from: bytes) == .task(task), "the task handed over is the one the runner fed, field for field")
    }

    @Test func everyLineOfABatchSharesOneObject() throws {
        let batch = Self.batch
        let lines = try (0..<3).map { entry in
            LaneMember.holding(try Self.fed(Self.openAILine("c-\(entry)"), at: 300 * entry, entry: entry), batch: batch)
        }
        for member in lines {
            guard case .line(let line) = member else {
                Issue.record("\(member) is not held as a line")
                continue
            }
            #expect(line.batch === batch)
        }
    }

    @Test func aLineIsHeldWholeWhenItsOffsetsCannotGiveItBack() throws {
        let task = try Self.fed(Self.openAILine("d-1"), at: 10)
        #expect(LaneMember.holding(task, batch: nil) == .task(task), "no batch to share")
        var retried = task
        retried.history.attempts.append(AttemptEntry(startedAt: Self.accepted, endedAt: Self.accepted, endpoint: "e", outcome: "http"))
        #expect(LaneMember.holding(retried, batch: Self.batch) == .task(retried), "a line retried before a restart keeps its attempts")
        var waitingRetry = task
        waitingRetry.history.notBefore = Self.accepted.addingTimeInterval(60)
        #expect(LaneMember.holding(waitingRetry, batch: Self.batch) == .task(waitingRetry))
        var takenOver = task
        takenOver.takenOver = true
        #expect(LaneMember.holding(takenOver, batch: Self.batch) == .task(takenOver), "what the scheduler added is kept")
        var pinned = task
        pinned.pinnedEndpoint = 1
        #expect(LaneMember.holding(pinned, batch: Self.batch) == .task(pinned))
        let otherFile = LaneLineBatch(name: "night", inputPath: Self.path,
                                      identity: FileIdentity(device: 3, inode: 78, size: 4096, modifiedNanoseconds: 1), firstSeen: Self.accepted)
        #expect(LaneMember.holding(task, batch: otherFile) == .task(task), "another input under the batch's name")
        let later = LaneLineBatch(name: "night", inputPath: Self.path, identity: Self.identity, firstSeen: Self.accepted.addingTimeInterval(1))
        #expect(LaneMember.holding(task, batch: later) == .task(task), "another acceptance time: its history would not be the same")
        var noLine = task
        noLine.line = nil
        #expect(LaneMember.holding(noLine, batch: Self.batch) == .task(noLine), "a request file has no line")
        var bodyOutside = task
        bodyOutside.line = 10..<20
        #expect(LaneMember.holding(bodyOutside, batch: Self.batch) == .task(bodyOutside), "offsets that do not hold the body are not trusted")
    }

    @Test func aRequestFilesTaskIsHeldWhole() {
        let task = TaskDescriptor(id: "r1", requestPath: "/spool/outgoing/r1.json", summary: RequestSummary(model: "m", stream: false, size: 40),
                                  identity: Self.identity)
        #expect(LaneMember.holding(task, batch: Self.batch) == .task(task))
        #expect(LaneMember.holding(task, batch: Self.batch).path == "/spool/outgoing/r1.json")
    }

    /// The batch's input was replaced (or rewritten) while its line waited: what is at the
    /// line's offsets now is not the line, and no task is made of it.
    @Test func aLineWhoseBatchChangedWhileItWaitedIsNotReadBackAsATask() throws {
        let bytes = Self.openAILine("e-1")
        let task = try Self.fed(bytes, at: 500)
        guard case .line(let line) = LaneMember.holding(task, batch: Self.batch) else {
            Issue.record("not held as a line")
            return
        }
        guard case .changed(let shorter) = line.task(from: Array(bytes.dropLast(2))) else {
            Issue.record("a short read is not the line")
            return
        }
        #expect(shorter.contains(Self.path) && shorter.contains("offset 500"), "the problem names the file and where: \(shorter)")
        var garbage = bytes
        garbage[0] = UInt8(ascii: "[")
        guard case .changed(let unreadable) = line.task(from: garbage) else {
            Issue.record("bytes that are no line are not the line")
            return
        }
        #expect(unreadable.contains("no longer reads"))
        // The same length, but another line: its body is elsewhere.
        let moved = Array(#"{"body":{"model":"m","messages":[{"role":"user","content":"q \"é\""}],"max_tokens":7},"custom_id":"e-1","method":"POST","url":"/v1/chat/completions","completion_window":"24h"}"#.utf8)
        #expect(moved.count == bytes.count)
        guard case .changed(let elsewhere) = line.task(from: moved) else {
            Issue.record("a line whose body moved is another line")
            return
        }
        #expect(elsewhere.contains("body elsewhere"))
    }

    /// The batch was cancelled or ended while the line waited: its input is gone or another
    /// file, so the line's fate is a discard, whether or not it is at hand.
    @Test func aLineWhoseBatchEndedWhileItWaitedIsDiscarded() {
        for atHand in [true, false] {
            for journal in [LaneLineFate.Journal.open, .committed, .retried] {
                #expect(LaneLineFate.decide(input: .changed, atHand: atHand, journal: journal) == .discard)
            }
        }
    }

    /// What the form is for: a table slot of a line is a fraction of a task's.
    @Test func aMemberIsAFractionOfATasksSize() {
        #expect(MemoryLayout<LaneMember>.stride * 4 <= MemoryLayout<TaskDescriptor>.stride,
                "\(MemoryLayout<LaneMember>.stride) bytes a member against \(MemoryLayout<TaskDescriptor>.stride) a task")
    }

    @Test func batchesAreEqualByWhatTheirLinesShare() {
        #expect(Self.batch == Self.batch)
        #expect(Self.batch != LaneLineBatch(name: "other", inputPath: Self.path, identity: Self.identity, firstSeen: Self.accepted))
        #expect(Self.batch != LaneLineBatch(name: "night", inputPath: "/elsewhere", identity: Self.identity, firstSeen: Self.accepted))
        var task = TaskDescriptor(id: "x", requestPath: Self.path, summary: RequestSummary(model: "m", stream: false, size: 1), identity: nil)
        #expect(LaneLineBatch(name: "night", task: task) == nil, "no identity to check the input against")
        task = TaskDescriptor(id: "x", requestPath: Self.path, summary: RequestSummary(model: "m", stream: false, size: 1), identity: Self.identity,
                              history: TaskHistory(firstSeen: Self.accepted))
        #expect(LaneLineBatch(name: "night", task: task) == Self.batch)
    }
}
