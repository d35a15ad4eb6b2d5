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

    /// What a power loss leaves in the one-fsync order: marked results whose requests' removal
    /// survived and whose records did not (one lost, one left `active`), and the previous
    /// run's mark in `state/.run`, from a boot that is not this one when `rebooted`.
    func powerLossLeftovers(_ harness: Harness, rebooted: Bool) throws -> [String: FileIdentity] {
        var identities: [String: FileIdentity] = [:]
        for (id, prompt) in [("lost", "answered before the power went"), ("stale", "answered too")] {
            try harness.drop(id, Harness.request(prompt))
            let requestMark = try mark(of: harness.layout.request(id), id: id)
            identities[id] = requestMark.request
            try DurableFile.write(Array(#"{"object":"chat.completion","choices":[]}"#.utf8), to: harness.layout.result(id))
            try Syscall.setxattr(harness.layout.result(id), ResultMark.attribute, requestMark.encoded())
            try Syscall.unlink(harness.layout.request(id))
        }
        try FileManager.default.createDirectory(atPath: harness.layout.state, withIntermediateDirectories: true)
        var history = TaskHistory(firstSeen: Date(timeIntervalSinceNow: -120))
        history.unfinishedStarts = 1
        try TaskRecord(id: "stale", status: .active, request: identities["stale"], history: history).write(harness.layout, durable: true)
        let thisBoot = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let previous = PowerLossRepair.RunMark(bootID: rebooted ? "00000000-0000-4000-8000-000000000000" : thisBoot,
                                               startedNanoseconds: Int64((Date().timeIntervalSince1970 - 60) * 1e9))
        try DurableFile.write(previous.encoded(), to: harness.layout.runMark)
        return identities
    }

    @Test func afterARebootResultsWhoseRecordsWereLostGetThemBack() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        _ = try powerLossLeftovers(harness, rebooted: true)
        try harness.startDaemon()
        try waitUntil("the daemon watches", timeout: 20) { harness.log.contains("watching") }
        for id in ["lost", "stale"] {
            let record = try harness.record(id)
            #expect(record["status"] as? String == "done", "\(id): \(record)")
            #expect(record["result_inode"] as? NSNumber == NSNumber(value: UInt64(try Syscall.lstat(harness.layout.result(id)).st_ino)))
        }
        #expect(harness.log.contains("they were written again from their results records=2"), "\(harness.log)")
        #expect(try harness.arrivals(of: "answered before the power went").isEmpty)
        let mark = try #require(PowerLossRepair.RunMark.parse(Array(try Data(contentsOf: URL(fileURLWithPath: harness.layout.runMark)))))
        #expect(mark.bootID != "00000000-0000-4000-8000-000000000000", "this run's mark replaces the last one's")
    }

    @Test func aStartInTheSameBootLooksAtNoResult() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        _ = try powerLossLeftovers(harness, rebooted: false)
        try harness.startDaemon()
        try waitUntil("the daemon watches", timeout: 20) { harness.log.contains("watching") }
        #expect(!exists(harness.layout.taskRecord("lost")), "a kill keeps the records: nothing is looked at")
        #expect(try harness.record("stale")["status"] as? String == "active")
        #expect(!harness.log.contains("written again from their results"))
    }
}
