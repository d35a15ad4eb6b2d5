import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// A request replaced while its predecessor of the same id is in flight is a new task: the
/// real daemon, the stub and real files (issue 14, defects 4 and 9).
@Suite(.serialized) struct ReplacedRequestTests {
    @Test(arguments: ["rename", "in place"])
    func aReplacementDuringTheFlightIsSentAfterIt(_ how: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        try harness.drop("twice", Harness.request("first version", stub: ["latency_ms": 1500]))
        try waitUntil("the first version reaches the endpoint", timeout: 20) {
            try harness.stubArrivals().contains { $0.prompt == "first version" }
        }
        let second = Array(try JSONSerialization.data(withJSONObject: Harness.request("second version")))
        if how == "rename" {
            try harness.drop("twice", bytes: second)
        } else {
            // An editor writing in place: same inode, new content.
            let fd = try Syscall.open(harness.layout.request("twice"), O_WRONLY | O_TRUNC)
            try Syscall.writeAll(fd, second)
            Syscall.close(fd)
        }
        try waitUntil("the second version is answered", timeout: 30) {
            try harness.stubArrivals().contains { $0.prompt == "second version" }
                && Harness.content(of: (try? harness.json(harness.layout.result("twice"))) ?? [:]) == StubAnswer.content(prompt: "second version", tokens: 8)
        }
        try waitUntil("outgoing is empty", timeout: 10) { harness.files(in: harness.layout.outgoing).isEmpty }
        #expect(try harness.stubArrivals().filter { $0.prompt == "second version" }.count == 1, "the newer request was sent once")
        #expect(harness.files(in: harness.layout.failed).isEmpty)
    }

    /// A request answered, then a newer file under its name deleted while it waits for a
    /// slot: the newer one is withdrawn (reported cancelled), the first one's end stands.
    @Test func aNewerFileUnderAFinishedNameDeletedWhileQueuedIsCancelled() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["concurrency": 1])
        try harness.drop("again", Harness.request("first again"))
        try waitUntil("the first is answered", timeout: 20) { (try? harness.record("again"))?["status"] as? String == "done" }
        try harness.drop("busy", Harness.request("hold the slot", stub: ["latency_ms": 4000]))
        try waitUntil("the slot is taken", timeout: 20) { try harness.stubArrivals().contains { $0.prompt == "hold the slot" } }
        try harness.drop("again", Harness.request("second again"))
        try waitUntil("the newer file is read", timeout: 20) { harness.log.components(separatedBy: "validated id=again ").count - 1 >= 2 }
        try Syscall.unlink(harness.layout.request("again"))
        try waitUntil("the newer file is withdrawn", timeout: 20) {
            harness.log.contains("cancelled: the request was removed before it started id=again")
        }
        try waitUntil("the slot's request is answered", timeout: 20) { (try? harness.record("busy"))?["status"] as? String == "done" }
        #expect(try !harness.stubArrivals().contains { $0.prompt == "second again" }, "the withdrawn file was never sent")
        #expect((try? harness.record("again"))?["status"] as? String == "done", "the first one's end stands")
        #expect(Harness.content(of: try harness.json(harness.layout.result("again"))) == StubAnswer.content(prompt: "first again", tokens: 8))
        #expect(!harness.log.contains("the removed request had ended already; nothing to report id=again"))
    }

    @Test func aSecondFailureOfAnIdKeepsTheFirst() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon()
        for version in ["first", "second"] {
            try harness.drop("refused", Harness.request("\(version) refusal", stub: ["status": 400]))
            try waitUntil("the \(version) refusal is recorded", timeout: 20) {
                (try? harness.json(harness.layout.failedRequest("refused")))
                    .flatMap { (($0["messages"] as? [[String: Any]])?.first?["content"] as? String) } == "\(version) refusal"
            }
        }
        let archived = try harness.json(harness.layout.superseded + "/1.refused.json")
        #expect(((archived["messages"] as? [[String: Any]])?.first?["content"] as? String) == "first refusal")
        #expect(FileManager.default.fileExists(atPath: harness.layout.superseded + "/1.refused.error.json"))
        #expect(FileManager.default.fileExists(atPath: harness.layout.errorRecord("refused")))
    }
}
