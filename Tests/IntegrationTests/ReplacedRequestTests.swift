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
