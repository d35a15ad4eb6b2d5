import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// The one-fsync commit order with the real daemon: its results carry their request's
/// mark, and a restart that finds a marked result without its record (what a power loss
/// leaves) ends the request from the result alone, without sending it again.
@Suite(.serialized) struct ResultMarkRecoveryTests {
    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// The mark of the request at `path` as the daemon would write it.
    func mark(of path: String, id: String) throws -> ResultMark {
        let info = try Syscall.lstat(path)
        return ResultMark(id: id, request: FileIdentity(info))
    }

    @Test func aResultCarriesTheMarkOfItsRequest() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.drop("marked", Harness.request("mark me"))
        let expected = try mark(of: harness.layout.request("marked"), id: "marked")
        try harness.startDaemon()
        try waitUntil("the request is answered", timeout: 20) { exists(harness.layout.result("marked")) && !exists(harness.layout.request("marked")) }
        #expect(harness.log.contains("commit_order=result-marked"), "the spool's order is logged")
        let bytes = try Syscall.getxattr(harness.layout.result("marked"), ResultMark.attribute, limit: ResultMark.maximumSize)
        guard case .success(let found)? = bytes.map(ResultMark.parse) else {
            Issue.record("the result has no readable mark: \(String(describing: bytes))")
            return
        }
        #expect(found.proves(id: "marked", identity: expected.request))
        #expect(found.dialect != nil)
        #expect((try harness.record("marked"))["status"] as? String == "done")
    }

    @Test func aMarkedResultWithoutItsRecordEndsTheRequestUnsent() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.drop("lost", Harness.request("already answered"))
        let result = harness.layout.result("lost")
        try DurableFile.write(Array(#"{"object":"chat.completion","choices":[]}"#.utf8), to: result)
        try Syscall.setxattr(result, ResultMark.attribute, try mark(of: harness.layout.request("lost"), id: "lost").encoded())
        try harness.startDaemon()
        try waitUntil("the request is removed", timeout: 20) { !exists(harness.layout.request("lost")) }
        #expect(try harness.arrivals(of: "already answered").isEmpty, "never sent again")
        #expect(harness.log.contains("the result proves the request's end; its record is written again id=lost"))
        try waitUntil("the record says done", timeout: 10) { (try? harness.record("lost"))?["status"] as? String == "done" }
        #expect(try harness.record("lost")["result_inode"] as? NSNumber == NSNumber(value: UInt64(try Syscall.lstat(result).st_ino)))
        #expect(try String(contentsOfFile: result, encoding: .utf8).contains("chat.completion"), "the result is kept")
    }

    @Test func aMarkOfAnEarlierRequestOrAGarbledOneDoesNotEndANewRequest() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.drop("old", Harness.request("new question"))
        try harness.drop("junk", Harness.request("junk mark"))
        var earlier = try mark(of: harness.layout.request("old"), id: "old")
        earlier.request = earlier.request.with(bornNanoseconds: 1)
        for (id, value) in [("old", earlier.encoded()), ("junk", Array("llmspool-result-mark 1\nnot a number".utf8))] {
            try DurableFile.write(Array(#"{"object":"chat.completion","choices":[],"stale":true}"#.utf8), to: harness.layout.result(id))
            try Syscall.setxattr(harness.layout.result(id), ResultMark.attribute, value)
        }
        try harness.startDaemon()
        for id in ["old", "junk"] {
            try waitUntil("\(id) is answered again", timeout: 20) {
                !exists(harness.layout.request(id)) && (try? String(contentsOfFile: harness.layout.result(id), encoding: .utf8))?.contains("stale") == false
            }
        }
        #expect(try harness.arrivals(of: "new question").count == 1)
        #expect(try harness.arrivals(of: "junk mark").count == 1)
        #expect(harness.log.contains("the result's mark is unusable"), "a garbled mark is named in the log")
    }
}
