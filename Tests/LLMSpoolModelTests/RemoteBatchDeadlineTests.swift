import Testing
@testable import LLMSpoolModel

/// A remote batch that outruns its deadline is cancelled, and one whose cancel never ends
/// it is given up: a provider that keeps a batch running cannot hold its requests for ever.
@Suite struct RemoteBatchDeadlineTests {
    /// Made at 10,000 s, polled, with a 100 s deadline.
    func polling(status: String = "in_progress") -> RemoteBatchMachine {
        var intent = RemoteIntent(group: "g1", endpoint: "openai", url: "/v1/chat/completions", createdAt: 10_000,
                                  members: [.init(id: "a", request: nil), .init(id: "b", request: nil)])
        intent.state = .polling
        intent.inputFileID = "file-1"
        intent.batchID = "batch_1"
        var machine = RemoteBatchMachine(intent: intent, deadlineSeconds: 100)
        #expect(machine.handle(.start) == [.perform(.poll)])
        #expect(machine.handle(.polled(.init(status: status, total: 2))).last?.isWait == true)
        return machine
    }

    func warning(_ actions: [RemoteBatchMachine.Action]) -> String? {
        for case .warn(let message) in actions { return message }
        return nil
    }

    @Test func aPollDueBeforeTheDeadlineIsTaken() {
        var machine = polling()
        #expect(machine.handle(.due(.poll, now: 10_099)) == [.perform(.poll)])
        #expect(machine.handle(.polled(.init(status: "in_progress", total: 2))).last?.isWait == true, "the poll was what the machine waited for")
    }

    @Test func aBatchStillRunningAtItsDeadlineIsCancelledAndEndsAsACancelledBatch() throws {
        var machine = polling(status: "finalizing")
        let actions = machine.handle(.due(.poll, now: 10_100))
        #expect(actions.last == .perform(.cancel))
        let message = try #require(warning(actions))
        #expect(message.contains("batch_1") && message.contains("finalizing") && message.contains("batch_deadline_seconds (100)"), "\(message)")
        #expect(machine.handle(.cancelRequested) == [.perform(.poll)])
        #expect(machine.handle(.polled(.init(status: "cancelling", total: 2))).last == .wait(seconds: 30, then: .poll))
        #expect(machine.handle(.due(.poll, now: 10_200)) == [.perform(.poll)], "the cancel's grace has begun")
        let ended = machine.handle(.polled(.init(status: "cancelled", total: 2, completed: 1, outputFileID: "file-out")))
        #expect(ended.last == .perform(.download(outputFileID: "file-out", errorFileID: nil)), "what ran is downloaded")
        #expect(machine.intent.state == .ended)
    }

    @Test func aCancelledBatchThatNeverEndsIsGivenUpAfterItsGrace() {
        var machine = polling()
        _ = machine.handle(.due(.poll, now: 20_000))
        _ = machine.handle(.cancelRequested)
        _ = machine.handle(.polled(.init(status: "cancelling", total: 2)))
        #expect(machine.handle(.due(.poll, now: 20_100)) == [.perform(.poll)], "the grace runs from the cancel")
        _ = machine.handle(.polled(.init(status: "cancelling", total: 2)))
        let grace = RemoteBatchMachine.cancelGraceSeconds
        #expect(machine.handle(.due(.poll, now: 20_000 + grace - 1)) == [.perform(.poll)])
        _ = machine.handle(.polled(.init(status: "cancelling", total: 2)))
        let actions = machine.handle(.due(.poll, now: 20_000 + grace))
        guard case .abandon(let message)? = actions.last, actions.count == 1 else {
            Issue.record("given up: \(actions)")
            return
        }
        #expect(message.contains("batch_1") && message.contains("cancelling") && message.contains("go live"), "\(message)")
        #expect(machine.handle(.polled(.init(status: "completed", outputFileID: "late"))) == [], "a late answer is not read")
    }

    @Test func aGroupWhoseMembersWereDeletedIsGivenUpWhenItsCancelNeverEndsIt() {
        var machine = polling()
        #expect(machine.handle(.withdrawn) == [.perform(.cancel)])
        #expect(machine.handle(.cancelRequested) == [.perform(.poll)])
        _ = machine.handle(.polled(.init(status: "cancelling", total: 2)))
        #expect(machine.handle(.due(.poll, now: 10_050)) == [.perform(.poll)])
        _ = machine.handle(.polled(.init(status: "cancelling", total: 2)))
        guard case .abandon? = machine.handle(.due(.poll, now: 10_050 + RemoteBatchMachine.cancelGraceSeconds)).last else {
            Issue.record("the withdrawn group's stuck cancel was not given up")
            return
        }
    }

    @Test func aRefusedCancelStillHasItsGrace() {
        var machine = polling()
        _ = machine.handle(.due(.poll, now: 20_000))
        #expect(machine.handle(.failed(retryable: false, retryAfter: nil, message: "409")) == [.perform(.poll)])
        _ = machine.handle(.polled(.init(status: "in_progress", total: 2)))
        #expect(machine.handle(.due(.poll, now: 20_010)) == [.perform(.poll)], "no second cancel")
        _ = machine.handle(.polled(.init(status: "in_progress", total: 2)))
        guard case .abandon? = machine.handle(.due(.poll, now: 20_010 + RemoteBatchMachine.cancelGraceSeconds)).last else {
            Issue.record("a batch whose cancel was refused and that never ends was not given up")
            return
        }
    }

    @Test func onlyAPollIsHeldToTheDeadline() {
        var machine = polling()
        #expect(machine.handle(.due(.download(outputFileID: "o", errorFileID: nil), now: 99_999)) == [.perform(.download(outputFileID: "o", errorFileID: nil))])
        var creating = RemoteBatchMachine(intent: RemoteIntent(group: "g2", endpoint: "openai", url: "/v1/chat/completions", createdAt: 0, members: []),
                                          deadlineSeconds: 1)
        _ = creating.handle(.start)
        #expect(creating.handle(.due(.upload, now: 99_999)) == [.perform(.upload)], "nothing remote to cancel yet")
    }

    @Test func reconcilingThatNeverSettlesIsGivenUpAtTheDeadline() {
        // Anthropic: a message batch of the group's size that never ends is waited for.
        var intent = RemoteIntent(group: "g3", endpoint: "anthropic", api: .anthropic, url: "/v1/messages", createdAt: 10_000,
                                  members: [.init(id: "a", request: nil)])
        intent.state = .creating
        var machine = RemoteBatchMachine(intent: intent, deadlineSeconds: 100)
        #expect(machine.handle(.start) == [.perform(.list(after: nil))])
        let running = RemoteBatchListing(entries: [.init(id: "msgbatch_x", group: nil, createdAt: 10_001, total: 1, ended: false)], hasMore: false)
        #expect(machine.handle(.listed(running)).last == .wait(seconds: 30, then: .list(after: nil)))
        #expect(machine.handle(.due(.list(after: nil), now: 10_099)) == [.perform(.list(after: nil))], "reconciling begins here in this run")
        #expect(machine.handle(.listed(running)).last == .wait(seconds: 30, then: .list(after: nil)))
        let floor = RemoteBatchMachine.defaultDeadlineSeconds
        #expect(machine.handle(.due(.list(after: nil), now: 10_099 + floor - 1)) == [.perform(.list(after: nil))],
                "a short deadline does not shorten reconciling: the running batch may be the group's")
        #expect(machine.handle(.listed(running)).last == .wait(seconds: 30, then: .list(after: nil)))
        let actions = machine.handle(.due(.list(after: nil), now: 10_099 + floor))
        guard case .abandon(let message)? = actions.last, actions.count == 1 else {
            Issue.record("reconciling past the deadline was not given up: \(actions)")
            return
        }
        #expect(message.contains("reconciling"), "\(message)")
    }

    @Test func aGroupResumedPastItsDeadlineIsLookedAtBeforeAnythingIsGivenUp() {
        // Reconciling: the list is read first, whatever the group's age.
        var uploaded = RemoteIntent(group: "g5", endpoint: "openai", url: "/v1/chat/completions", createdAt: 10_000,
                                    members: [.init(id: "a", request: nil)])
        uploaded.state = .uploaded
        uploaded.inputFileID = "file-1"
        var reconciling = RemoteBatchMachine(intent: uploaded, deadlineSeconds: 100)
        guard case .perform(let first)? = reconciling.handle(.start).first else {
            Issue.record("a resumed upload takes a step")
            return
        }
        #expect(reconciling.handle(.due(first, now: 500_000)) == [.perform(first)], "looked at first, not given up")
        // Polling: polled first; a batch that ended meanwhile is downloaded, never cancelled.
        var polled = uploaded
        polled.state = .polling
        polled.batchID = "batch_1"
        polled.remoteStatus = "validating"
        var resumed = RemoteBatchMachine(intent: polled, deadlineSeconds: 100)
        #expect(resumed.handle(.start) == [.perform(.poll)])
        #expect(resumed.handle(.due(.poll, now: 500_000)) == [.perform(.poll)], "no cancel on a status recorded before the restart")
        #expect(resumed.handle(.polled(.init(status: "completed", total: 1, completed: 1, outputFileID: "o"))).last
                == .perform(.download(outputFileID: "o", errorFileID: nil)))
    }

    @Test func aCancelThatKeepsFailingIsGivenUpAfterItsGrace() {
        var machine = polling()
        #expect(machine.handle(.due(.poll, now: 20_000)).last == .perform(.cancel))
        var now = 20_000.0
        for _ in 0..<50 {
            guard case .wait(let seconds, .cancel)? = machine.handle(.failed(retryable: true, retryAfter: nil, message: "409 conflict")).last else {
                Issue.record("a retryable cancel failure waits and tries again")
                return
            }
            now += seconds
            let actions = machine.handle(.due(.cancel, now: now))
            if now - 20_000 >= RemoteBatchMachine.cancelGraceSeconds {
                guard case .abandon? = actions.last else {
                    Issue.record("a cancel failing past its grace was not given up: \(actions)")
                    return
                }
                return
            }
            #expect(actions == [.perform(.cancel)])
        }
        Issue.record("the grace never ran out")
    }

    @Test(arguments: [Int.min, Int.max, -1])
    func anIntentTimeFromARecordOfAnyNumberNeverTraps(createdAt: Int) {
        var intent = RemoteIntent(group: "g4", endpoint: "openai", url: "/v1/chat/completions", createdAt: createdAt,
                                  members: [.init(id: "a", request: nil)])
        intent.state = .polling
        intent.inputFileID = "file-1"
        intent.batchID = "batch_1"
        var polling = RemoteBatchMachine(intent: intent)
        _ = polling.handle(.start)
        _ = polling.handle(.polled(.init(status: "in_progress", total: 1)))
        let due = polling.handle(.due(.poll, now: 1_800_000_000))
        #expect(due.last == (createdAt == Int.max ? .perform(.poll) : .perform(.cancel)))
        intent.state = .uploaded
        intent.batchID = nil
        var listing = RemoteBatchMachine(intent: intent)
        _ = listing.handle(.start)
        _ = listing.handle(.uploaded(fileID: "file-1"))
        _ = listing.handle(.createUncertain)
        let page = RemoteBatchListing(entries: [.init(id: "batch_x", group: "other", createdAt: 5)], hasMore: true)
        #expect(!listing.handle(.listed(page)).isEmpty, "the list is followed or a create comes, without a trap")
    }

    @Test func notFoundCountsAreNotResetByAStepFallingDue() {
        var machine = polling()
        for _ in 1..<RemoteBatchMachine.maximumGone {
            #expect(machine.handle(.gone(message: "404")).last?.isWait == true)
            #expect(machine.handle(.due(.poll, now: 10_001)) == [.perform(.poll)])
        }
        guard case .abandon? = machine.handle(.gone(message: "404")).last else {
            Issue.record("the fifth 404 in a row, with steps falling due between them, did not give the group up")
            return
        }
    }
}
