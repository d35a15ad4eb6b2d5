import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// An operator who changes the batch endpoint while a remote batch runs and no daemon does
/// (kill -9, new config, restart): the batch already created is followed to its end, and
/// none of its requests is sent live as well, which would pay for it twice.
@Suite(.serialized) struct LaneConfigChangeTests {
    static func config(_ harness: Harness, name: String, batch: Bool) -> [String: Any] {
        var config = BackgroundLaneTests.lane
        config["endpoints"] = [["name": name, "base_url": harness.stubURL, "batch": batch]]
        return config
    }

    /// A group killed while its remote batch runs, then restarted with `settings`.
    func killWhilePolling(_ harness: Harness, _ ids: [String], prompt: String) throws {
        try harness.startStub(["--batch-seconds", "3"])
        try harness.startDaemon(config: Self.config(harness, name: "batchy", batch: true), environment: ["LLMSPOOL_TEST_LANE_PAUSE": "polled"])
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "\(prompt) \(id)")) }
        try waitUntil("the lane pauses while polling", timeout: 30) { harness.log.contains("lane test pause point=polled") }
        harness.killDaemon()
    }

    func expectAnsweredByTheBatchOnce(_ harness: Harness, _ ids: [String], prompt: String, timeout: TimeInterval = 60) throws {
        try BackgroundLaneTests().waitForOutcomes(harness, ids, timeout: timeout)
        try SDKJudge.expectParses("ChatCompletion", ids.map { harness.layout.result($0) })
        for id in ids {
            #expect(try harness.arrivals(of: "\(prompt) \(id)").isEmpty, "\(id) was sent live as well as in its batch")
            let attempts = try #require(try harness.record(id)["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1, "\(id): \(attempts)")
        }
        let made = try BackgroundLaneTests().creations(harness)
        #expect(made.count == 1 && made.values.first == 1, "one group, created once: \(made)")
        #expect(try BackgroundLaneTests().cancelledGroups(harness).isEmpty, "the remote batch was not cancelled")
    }

    @Test func batchTurnedOffWhileItsRemoteBatchRunsIsFollowedNotSentLive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let ids = ["f1", "f2", "f3"]
        try killWhilePolling(harness, ids, prompt: "Off")
        try harness.startDaemon(config: Self.config(harness, name: "batchy", batch: false))
        try expectAnsweredByTheBatchOnce(harness, ids, prompt: "Off")
    }

    /// With its endpoint gone from the config, the batch cannot be followed: its requests
    /// wait, sent nowhere, until the endpoint is back.
    @Test func aRemoteBatchWhoseEndpointLeftTheConfigWaitsForIt() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let ids = ["g1", "g2", "g3"]
        try killWhilePolling(harness, ids, prompt: "Gone")
        for batch in [false, true] {
            try harness.startDaemon(config: Self.config(harness, name: "renamed", batch: batch))
            try waitUntil("the lane says the endpoint is missing", timeout: 30) {
                harness.log.components(separatedBy: "the endpoint of a remote batch is not in the config").count > (batch ? 2 : 1)
            }
            let run = batch ? 2 : 1
            try waitUntil("every request is back with its batch", timeout: 30) {
                ids.allSatisfy { harness.log.components(separatedBy: "found again for its remote batch id=\($0) ").count > run }
            }
            for id in ids {
                #expect(try harness.arrivals(of: "Gone \(id)").isEmpty, "\(id) was sent live while its batch waits (batch \(batch))")
                #expect(!Syscall.isPresent(harness.layout.result(id)) && !Syscall.isPresent(harness.layout.errorRecord(id)), "\(id)")
            }
            harness.stopDaemon()
        }
        try harness.startDaemon(config: Self.config(harness, name: "batchy", batch: false))
        try expectAnsweredByTheBatchOnce(harness, ids, prompt: "Gone")
    }

    /// A reload that stops the endpoint batching while requests wait for their group to
    /// fill: they go live at once, and no batch is made on an endpoint that said no.
    @Test(arguments: [false, true])
    func aReloadThatStopsBatchingSendsTheWaitingRequestsLive(renamed: Bool) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "2"])
        var settings = Self.config(harness, name: "batchy", batch: true)
        settings["batch_linger_seconds"] = 600
        try harness.startDaemon(config: settings)
        let ids = ["r1", "r2", "r3"]
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "Reload \(id)")) }
        try waitUntil("every request waits for its group", timeout: 20) {
            ids.allSatisfy { harness.log.contains("deferred to the background lane id=\($0) ") }
        }
        var reloaded = Self.config(harness, name: renamed ? "other" : "batchy", batch: false)
        reloaded["batch_linger_seconds"] = 600
        try harness.writeConfig(reloaded)
        harness.signalDaemon(SIGHUP)
        try BackgroundLaneTests().waitForOutcomes(harness, ids, timeout: 30)
        for id in ids {
            #expect(try harness.arrivals(of: "Reload \(id)").count == 1, "\(id) was sent live once")
            #expect(Syscall.isPresent(harness.layout.result(id)), "\(id) answered")
        }
        #expect(try BackgroundLaneTests().creations(harness).isEmpty, "no batch on an endpoint that no longer batches")
    }

    /// The endpoint brought back by a reload: the waiting batch goes on at once, not at its
    /// next try a minute later.
    @Test func anEndpointBroughtBackByAReloadResumesItsBatchAtOnce() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let ids = ["b1", "b2", "b3"]
        try killWhilePolling(harness, ids, prompt: "Back")
        try harness.startDaemon(config: Self.config(harness, name: "renamed", batch: true))
        try waitUntil("the lane says the endpoint is missing", timeout: 30) {
            harness.log.contains("the endpoint of a remote batch is not in the config")
        }
        try harness.writeConfig(Self.config(harness, name: "batchy", batch: true))
        harness.signalDaemon(SIGHUP)
        try expectAnsweredByTheBatchOnce(harness, ids, prompt: "Back", timeout: 30)
    }

    /// Uploaded, its create refused (a 429 proves nothing was made), killed, and restarted
    /// with the endpoint no longer batching: the provider's list shows no batch of the
    /// group, so none is made now; the requests go live, once each.
    @Test func anUploadedGroupWithNoBatchIsSentLiveWhenBatchingWasTurnedOff() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub(["--batch-seconds", "2", "--batch-faults", "create:429,create:429,create:429,create:429"])
        try harness.startDaemon(config: Self.config(harness, name: "batchy", batch: true))
        let ids = ["u1", "u2", "u3"]
        for id in ids { try harness.drop(id, BackgroundLaneTests.deferrable(id, "Uploaded \(id)")) }
        try waitUntil("the create was refused", timeout: 30) { harness.log.contains("a remote batch step failed") }
        harness.killDaemon()
        let record = try #require(harness.files(in: harness.layout.remote).first { $0.hasSuffix(".json") })
        #expect(try harness.json(harness.layout.remote + "/" + record)["state"] as? String == "uploaded")
        try harness.startDaemon(config: Self.config(harness, name: "batchy", batch: false))
        try BackgroundLaneTests().waitForOutcomes(harness, ids, timeout: 30)
        for id in ids { #expect(try harness.arrivals(of: "Uploaded \(id)").count == 1, "\(id) was sent live once") }
        #expect(try BackgroundLaneTests().creations(harness).isEmpty, "no batch made on an endpoint that no longer batches")
        #expect(harness.log.contains("no longer batches, and no batch of the group was found"))
    }
}
