import Foundation
import Testing
@testable import LLMSpoolModel

// Starts held while the spool's folders were not its own, released once they are back
// (`Scheduler.Event.releaseHeld`): due at once, but in their place, and never past an
// endpoint's cool-down (unlike `retry`, a person's ask). The helpers are the suite's.
extension SchedulerSendNowTests {
    /// `id` started, ended, and deferred by its finisher until `until`.
    func held(_ s: inout Scheduler, _ id: String, until: Double, now: Double) {
        _ = s.handle(.arrived(.valid(task(id))), now: now)
        _ = s.handle(.transferEnded(id: id, feedback: EndpointFeedback(.answered)), now: now)
        _ = s.handle(.retry(task(id, notBefore: until), at: until), now: now)
    }

    @Test func aHeldTaskIsDueAtOnceWithoutItsWait() throws {
        var s = Scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, now: 0)])
        held(&s, "h", until: 60, now: 0)
        #expect(s.state(of: "h") == .deferred(until: 60))
        let actions = s.handle(.releaseHeld(ids: ["h"]), now: 1)
        #expect(started(actions) == ["h"])
        guard case .start(let sent, _)? = actions.first else { Issue.record("not started"); return }
        #expect(sent.history.notBefore == nil, "the record must not keep the hold's wait")
        _ = s.handle(.transferEnded(id: "h", feedback: EndpointFeedback(.answered)), now: 2)
        _ = s.handle(.finalized(id: "h"), now: 2)
        #expect(started(s.handle(.tick, now: 61)).isEmpty, "its old timer starts nothing")
    }

    @Test func aReleasedTaskQueuesBehindThoseAlreadyQueued() {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0)])
        held(&s, "h2", until: 60, now: 0)
        #expect(started(s.handle(.arrived(.valid(task("running"))), now: 0)) == ["running"])
        #expect(s.handle(.arrived(.valid(task("queued"))), now: 0).isEmpty)
        #expect(s.handle(.releaseHeld(ids: ["h2"]), now: 1).isEmpty, "the one slot is taken")
        #expect(started(s.handle(.transferEnded(id: "running", feedback: EndpointFeedback(.answered)), now: 2)) == ["queued"],
                "not put in front, as a person's retry is")
        _ = s.handle(.finalized(id: "running"), now: 2)
        #expect(started(s.handle(.transferEnded(id: "queued", feedback: EndpointFeedback(.answered)), now: 3)) == ["h2"])
    }

    @Test func anEndpointsCoolDownStillHoldsAReleasedTask() {
        var s = Scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, cooldownAfterFailures: 2, cooldownSeconds: 30, now: 0)])
        held(&s, "h3", until: 60, now: 0)
        for id in ["f1", "f2"] {
            _ = s.handle(.arrived(.valid(task(id))), now: 1)
            _ = s.handle(.transferEnded(id: id, feedback: EndpointFeedback(.retryableFailure)), now: 1)
            _ = s.handle(.finalized(id: id), now: 1)
        }
        #expect(started(s.handle(.releaseHeld(ids: ["h3"]), now: 2)).isEmpty, "the cool-down holds it")
        #expect(s.state(of: "h3") == .queued)
        #expect(started(s.handle(.tick, now: 32)) == ["h3"], "the cool-down ends")
    }

    /// The status thread may release a held start before its finisher has posted its retry:
    /// the retry, when it comes, is due at once rather than after the hold's long wait.
    @Test func aTaskReleasedWhileFinishingIsDueWhenItsRetryComes() {
        var s = Scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, now: 0)])
        #expect(started(s.handle(.arrived(.valid(task("h"))), now: 0)) == ["h"])
        _ = s.handle(.transferEnded(id: "h", feedback: EndpointFeedback(.answered)), now: 0)
        #expect(s.state(of: "h") == .finishing)
        #expect(s.handle(.releaseHeld(ids: ["h"]), now: 1).isEmpty)
        #expect(started(s.handle(.retry(task("h", notBefore: 60), at: 60), now: 1)) == ["h"])
        // Spent: its next retry waits as asked.
        _ = s.handle(.transferEnded(id: "h", feedback: EndpointFeedback(.answered)), now: 2)
        #expect(started(s.handle(.retry(task("h", notBefore: 60), at: 60), now: 2)).isEmpty)
        #expect(s.state(of: "h") == .deferred(until: 60))
    }

    @Test func aReleaseForATaskFinalizedMeanwhileIsForgotten() {
        var s = Scheduler(concurrency: 4, gates: [EndpointGate(concurrency: 4, now: 0)])
        _ = s.handle(.arrived(.valid(task("h"))), now: 0)
        _ = s.handle(.transferEnded(id: "h", feedback: EndpointFeedback(.answered)), now: 0)
        _ = s.handle(.releaseHeld(ids: ["h"]), now: 1)
        _ = s.handle(.finalized(id: "h"), now: 1)
        // The same id dropped again later is a new request: its retry waits as asked.
        _ = s.handle(.arrived(.valid(task("h"))), now: 5)
        _ = s.handle(.transferEnded(id: "h", feedback: EndpointFeedback(.answered)), now: 5)
        #expect(started(s.handle(.retry(task("h", notBefore: 60), at: 60), now: 5)).isEmpty)
    }

    @Test func idsNotHeldAreLeftAlone() {
        var s = Scheduler(concurrency: 1, gates: [EndpointGate(concurrency: 1, now: 0)])
        #expect(started(s.handle(.arrived(.valid(task("running"))), now: 0)) == ["running"])
        #expect(s.handle(.arrived(.valid(task("queued"))), now: 0).isEmpty)
        #expect(s.handle(.releaseHeld(ids: ["running", "queued", "unknown"]), now: 1).isEmpty)
        #expect(s.state(of: "running") == .transferring(endpoint: 0))
        #expect(s.state(of: "queued") == .queued)
    }
}
