import Foundation
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// A request the background lane holds, replaced by its producer while its remote batch runs.
@Suite(.serialized) struct LaneReplacedRequestTests {
    /// A request replaced while its remote batch runs: the batch's answer is for the old
    /// file and is discarded; the new file is sent when the old one has ended, not at the
    /// next periodic rescan (a minute here).
    @Test func aRequestReplacedWhileItsBatchRunsIsSentWhenTheOldOneEnds() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "3"])
        try harness.startDaemon(config: LaneConfigChangeTests.config(harness, name: "batchy", batch: true))
        for id in ["n1", "n2"] { try harness.drop(id, BackgroundLaneTests.deferrable(id, "Old \(id)")) }
        try waitUntil("the remote batch runs", timeout: 30) { harness.log.contains("remote batch created") }
        try harness.drop("n1", Harness.request("New n1"))
        try waitUntil("both have their outcome", timeout: 30) {
            ["n1", "n2"].allSatisfy { Syscall.isPresent(harness.layout.result($0)) } && harness.files(in: harness.layout.outgoing).isEmpty
        }
        #expect(Harness.content(of: try harness.json(harness.layout.result("n1"))) == StubAnswer.content(prompt: "New n1", tokens: 8))
        #expect(try harness.arrivals(of: "New n1").count == 1, "the new file was sent live once")
        #expect(try harness.arrivals(of: "Old n1").isEmpty && harness.files(in: harness.layout.failed).isEmpty)
    }
}
