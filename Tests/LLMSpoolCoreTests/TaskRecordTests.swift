import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct TaskRecordTests {
    let identity = FileIdentity(device: 1, inode: 42, size: 100, modifiedNanoseconds: 123_456_789)

    func record(_ status: TaskRecord.Status, inode: UInt64? = nil) -> TaskRecord {
        TaskRecord(id: "a", status: status, request: identity, history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 5)),
                   resultInode: inode)
    }

    @Test func aRecordSurvivesEncoding() throws {
        let attempt = AttemptEntry(startedAt: Date(timeIntervalSince1970: 10.25), endedAt: Date(timeIntervalSince1970: 11.5),
                                   endpoint: "primary", outcome: "http", message: "HTTP 503", httpStatus: 503, timer: nil,
                                   bytesSent: 10, bytesReceived: 20)
        let original = TaskRecord(id: "x y", status: .failed, request: identity,
                                  history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 5), attempts: [attempt],
                                                       notBefore: Date(timeIntervalSince1970: 99.125), preferredEndpoint: 1),
                                  endpoint: "primary", usage: ["total_tokens": 7], resultInode: 9,
                                  errorRecord: Array(#"{"kind":"http"}"#.utf8))
        var named = original
        named.dialect = "responses"
        #expect(TaskRecord.decode(named.encoded())?.dialect == "responses")
        let decoded = try #require(TaskRecord.decode(original.encoded()))
        #expect(decoded.dialect == nil)
        #expect(!decoded.errorRecordOwed)
        var owed = original
        owed.errorRecordOwed = true
        #expect(TaskRecord.decode(owed.encoded())?.errorRecordOwed == true)
        #expect(decoded.id == original.id)
        #expect(decoded.status == .failed)
        #expect(decoded.request == identity)
        #expect(decoded.history == original.history)
        #expect(decoded.usage == ["total_tokens": 7])
        #expect(decoded.resultInode == 9)
        #expect(JSONObject.parse(try #require(decoded.errorRecord))?["kind"] as? String == "http")
        #expect(TaskRecord.decode(Array("{}".utf8)) == nil)
    }

    @Test func recoveryRollsForwardOnlyWhatProvablyEnded() {
        #expect(Recovery.decide(record: nil, identity: identity, resultInode: nil) == .fresh)
        #expect(Recovery.decide(record: record(.active), identity: identity, resultInode: nil) == .resume(record(.active).history))
        let other = FileIdentity(device: 1, inode: 43, size: 100, modifiedNanoseconds: 123_456_789)
        #expect(Recovery.decide(record: record(.active), identity: other, resultInode: nil) == .fresh, "another file of the same name")
        #expect(Recovery.decide(record: record(.done, inode: 7), identity: identity, resultInode: 7) == .alreadyEnded)
        #expect(Recovery.decide(record: record(.done, inode: 7), identity: identity, resultInode: nil) == .fresh,
                "committed but never published: run again")
        #expect(Recovery.decide(record: record(.done, inode: 7), identity: identity, resultInode: 8) == .fresh,
                "an older result of the same name is not this task's")
        #expect(Recovery.decide(record: record(.failed), identity: identity, resultInode: nil) == .alreadyEnded)
        #expect(Recovery.decide(record: record(.cancelled), identity: identity, resultInode: nil) == .fresh)
    }
}
