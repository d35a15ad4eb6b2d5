import Foundation
import LLMSpoolCore
import Testing

/// The background lane's own calls refused by a provider that echoes the key it was sent:
/// the refusal is logged, the group goes on (or goes live), and the key is in no file under
/// the spool (the lane's records in `state/remote` included) and in no log line.
@Suite(.serialized) struct LaneEchoedKeyTests {
    @Test(arguments: [("openai", "upload"), ("openai", "create"), ("openai", "poll"), ("anthropic", "create"), ("anthropic", "poll")])
    func aKeyTheBatchAPIEchoesIsBlankedOut(api: String, step: String) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "1", "--batch-faults", "\(step):echo_key"])
        let ids = ["echoed-1", "echoed-2"]
        if api == "anthropic" {
            try harness.startDaemon(config: BackgroundLaneMessagesTests().config(harness), environment: BackgroundLaneMessagesTests.environment)
            for id in ids { try harness.drop(id, BackgroundLaneMessagesTests.deferrable("Echoed key \(id)")) }
        } else {
            try harness.startDaemon(config: BackgroundLaneTests().config(harness))
            for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "Echoed key \(id)")) }
        }
        try BackgroundLaneTests().waitForOutcomes(harness, ids)
        for id in ids { #expect(Syscall.isPresent(harness.layout.result(id)), "\(id) was answered, by the batch or live") }
        let log = harness.log
        #expect(log.contains("a remote batch step failed"), "the \(step) met its fault")
        #expect(log.contains("Incorrect API key provided: <redacted>"), "the provider's text is kept, the key blanked")
        #expect(harness.filesContainingSecret().isEmpty, "no file under the spool or the log holds the key")
        #expect(!log.contains(Harness.secret) && !log.contains("SECRET"), "nor any part of it")
    }
}
