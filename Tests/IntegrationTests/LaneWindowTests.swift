import Foundation
import LLMSpoolCore
import Testing

/// A completion_window other than "24h" means the request does not wait; one that differs
/// only in case is taken as written, and said in the log, since it costs the live price.
@Suite(.serialized) struct LaneWindowTests {
    @Test func aWindowDifferingOnlyInCaseGoesLiveAndIsLogged() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1"])
        try harness.startDaemon(config: LaneConfigChangeTests.config(harness, name: "batchy", batch: true))
        var upper = BackgroundLaneTests.deferrable("w1", "Upper w1")
        upper["completion_window"] = "24H"
        var other = BackgroundLaneTests.deferrable("w2", "Other w2")
        other["completion_window"] = "1h"
        try harness.drop("w1", upper)
        try harness.drop("w2", other)
        try BackgroundLaneTests().waitForOutcomes(harness, ["w1", "w2"], timeout: 30)
        #expect(try harness.arrivals(of: "Upper w1").count == 1 && harness.arrivals(of: "Other w2").count == 1, "both went live")
        #expect(harness.log.contains("completion_window is read as written, and only \"24h\" waits: the request goes live id=w1"))
        #expect(!harness.log.contains("goes live id=w2"), "another window is no slip")
    }
}
