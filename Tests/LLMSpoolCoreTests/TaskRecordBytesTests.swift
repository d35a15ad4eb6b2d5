import Foundation
import Testing
@testable import LLMSpoolCore

/// The task record's exact bytes: readers outside the daemon (scripts, `jq`, the SDK
/// checks) see this layout, so an encoder written for speed must write the same text.
@Suite struct TaskRecordBytesTests {
    /// `updated_at` is the time of the write: replaced by a fixed text before comparing.
    func normalized(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
            .replacing(/"updated_at" : "[^"]*"/, with: #""updated_at" : "T""#)
    }

    static let plain = TaskRecord(id: "r1", status: .done, request: FileIdentity(device: 2049, inode: 131_074, size: 72, modifiedNanoseconds: 1_765_000_000_123_456_789),
                                  history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 1_765_000_000.5),
                                                       attempts: [AttemptEntry(startedAt: Date(timeIntervalSince1970: 1_765_000_001.25), endedAt: Date(timeIntervalSince1970: 1_765_000_002.0),
                                                                               endpoint: "primary", outcome: "ok", httpStatus: 200, bytesSent: 72, bytesReceived: 309)]),
                                  endpoint: "primary", usage: ["prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8])

    @Test func aPlainRecordKeepsItsLayout() {
        #expect(normalized(Self.plain.encoded()) == """
            {
              "attempts" : [{"bytes_received": 309, "bytes_sent": 72, "ended_at": "2025-12-06T05:46:42.000Z", "endpoint": "primary", "http_status": 200, "outcome": "ok", "started_at": "2025-12-06T05:46:41.250Z"}],
              "endpoint" : "primary",
              "first_seen" : "2025-12-06T05:46:40.500Z",
              "id" : "r1",
              "preferred_endpoint" : 0,
              "request" : {"device": 2049, "inode": 131074, "mtime_ns": 1765000000123456789, "size": 72},
              "status" : "done",
              "updated_at" : "T",
              "usage" : {"completion_tokens": 5, "prompt_tokens": 3, "total_tokens": 8}
            }

            """)
    }

    @Test func everyFieldEscapesAndExtremesKeepTheirLayout() {
        var first = AttemptEntry(startedAt: Date(timeIntervalSince1970: -1.5), endedAt: Date(timeIntervalSince1970: 1e300), endpoint: "a \"b\"\\c\n\t\r\u{1}\u{7f}é😀",
                                 outcome: "http", message: "HTTP 503: \u{1f}", httpStatus: -1, timer: "stall", bytesSent: Int64.min, bytesReceived: Int64.max)
        first.remoteBatch = "batch_1"
        first.providerRequestID = "req\"1"
        let second = AttemptEntry(startedAt: Date(timeIntervalSince1970: .nan), endedAt: Date(timeIntervalSince1970: -1e300), endpoint: "", outcome: "ok")
        var record = TaskRecord(id: "x\u{0}y", status: .failed,
                                request: FileIdentity(device: UInt64.max, inode: 0, size: -5, modifiedNanoseconds: Int64.min, bornNanoseconds: -7, contentHash: 0xdead_beef),
                                history: TaskHistory(firstSeen: Date(timeIntervalSince1970: 253_402_300_800), attempts: [first, second],
                                                     notBefore: Date(timeIntervalSince1970: 99.125), preferredEndpoint: -3, unfinishedStarts: 2),
                                endpoint: "e", usage: ["b": -1, "a": Int.max, "\u{e9}": 0, "B": 1], resultInode: UInt64.max,
                                errorRecord: Array("{\"kind\":\"http\"}\n \t\r".utf8))
        record.errorRecordOwed = true
        record.dialect = "messages"
        #expect(normalized(record.encoded()) == #"""
            {
              "attempts" : [{"bytes_received": 9223372036854775807, "bytes_sent": -9223372036854775808, "ended_at": "101405933-03-23T00:53:20.000Z", "endpoint": "a \"b\"\\c\n\t\r\u0001\#u{7f}é😀", "http_status": -1, "lane": "batch", "message": "HTTP 503: \u001f", "outcome": "http", "remote_batch": "batch_1", "request_id": "req\"1", "started_at": "1969-12-31T23:59:58.500Z", "timer": "stall"}, {"bytes_received": 0, "bytes_sent": 0, "ended_at": "-101401994-10-11T23:06:40.000Z", "endpoint": "", "outcome": "ok", "started_at": "1970-01-01T00:00:00.000Z"}],
              "dialect" : "messages",
              "endpoint" : "e",
              "error_record" : {"kind":"http"},
              "error_record_owed" : true,
              "first_seen" : "10000-01-01T00:00:00.000Z",
              "id" : "x\u0000y",
              "next_attempt_at" : "1970-01-01T00:01:39.125Z",
              "preferred_endpoint" : -3,
              "request" : {"btime_ns": -7, "device": 18446744073709551615, "inode": 0, "mtime_ns": -9223372036854775808, "size": -5, "fnv1a": "deadbeef"},
              "result_inode" : 18446744073709551615,
              "status" : "failed",
              "unfinished_starts" : 2,
              "updated_at" : "T",
              "usage" : {"B": 1, "a": 9223372036854775807, "b": -1, "é": 0}
            }

            """#)
    }

    @Test func anErrorRecordThatIsNotJSONIsAString() {
        var record = Self.plain
        record.errorRecord = Array("not json \"x\"\n".utf8)
        #expect(normalized(record.encoded()).contains(#"  "error_record" : "not json \"x\"\n","#))
    }
}
