import Testing
@testable import LLMSpoolModel

@Suite struct RemoteBatchMachineTests {
    let fresh = RemoteIntent(group: "g1", endpoint: "openai", url: "/v1/chat/completions", createdAt: 10_000,
                             members: [.init(id: "a", request: nil), .init(id: "b", request: nil)])

    func intent(_ state: RemoteBatchState, file: String? = "file-1", batch: String? = nil,
                output: String? = nil, error: String? = nil) -> RemoteIntent {
        var intent = fresh
        intent.state = state
        intent.inputFileID = state >= .uploaded ? file : nil
        intent.batchID = batch
        intent.outputFileID = output
        intent.errorFileID = error
        return intent
    }

    func recorded(_ actions: [RemoteBatchMachine.Action]) -> RemoteIntent? {
        for case .record(let intent) in actions { return intent }
        return nil
    }

    @Test func theWholeLifeRecordsEachStateBeforeTheStepThatDependsOnIt() throws {
        var machine = RemoteBatchMachine(intent: fresh)
        #expect(machine.handle(.start) == [.perform(.upload)])
        let upload = machine.handle(.uploaded(fileID: "file-1"))
        #expect(upload.count == 2 && upload[1] == .perform(.create))
        #expect(try #require(recorded(upload)).state == .uploaded)
        #expect(recorded(upload)?.inputFileID == "file-1")
        let create = machine.handle(.created(batchID: "batch_1"))
        #expect(recorded(create)?.batchID == "batch_1" && recorded(create)?.state == .created)
        #expect(create.last == .wait(seconds: 30, then: .poll))
        let first = machine.handle(.polled(.init(status: "in_progress", total: 2)))
        #expect(recorded(first)?.state == .polling && recorded(first)?.remoteStatus == "in_progress")
        #expect(first.last == .wait(seconds: 30, then: .poll))
        #expect(machine.handle(.polled(.init(status: "in_progress", total: 2))) == [.wait(seconds: 60, then: .poll)], "no record while nothing changes state")
        let ended = machine.handle(.polled(.init(status: "completed", total: 2, completed: 2, outputFileID: "file-out")))
        #expect(recorded(ended)?.state == .ended && recorded(ended)?.outputFileID == "file-out")
        #expect(ended.last == .perform(.download(outputFileID: "file-out", errorFileID: nil)))
        #expect(recorded(machine.handle(.downloaded))?.state == .downloaded)
        #expect(machine.handle(.split).last == .perform(.publish))
        #expect(machine.handle(.published) == [.finish])
        #expect(machine.intent.state == .published)
    }

    @Test func eventsThatAnswerNoStepAskedForAreIgnored() {
        var machine = RemoteBatchMachine(intent: fresh)
        _ = machine.handle(.start)
        #expect(machine.handle(.created(batchID: "batch_x")) == [], "no create was asked for")
        #expect(machine.handle(.polled(.init(status: "completed"))) == [])
        #expect(machine.handle(.listed(.init(entries: [], hasMore: false))) == [])
        #expect(machine.handle(.published) == [])
        #expect(machine.intent == fresh)
    }

    @Test func anUncertainCreateIsReconciledByListingAndAdoptsTheBatchFound() {
        var machine = RemoteBatchMachine(intent: fresh)
        _ = machine.handle(.start)
        _ = machine.handle(.uploaded(fileID: "file-1"))
        #expect(machine.handle(.createUncertain) == [.perform(.list(after: nil))])
        let page = RemoteBatchListing(entries: [.init(id: "batch_other", group: "g0", createdAt: 10_050),
                                                .init(id: "batch_mine", group: "g1", createdAt: 10_040)], hasMore: true)
        let adopted = machine.handle(.listed(page))
        #expect(recorded(adopted)?.batchID == "batch_mine" && recorded(adopted)?.state == .created)
        #expect(adopted.last == .perform(.poll))
    }

    @Test func listingPagesBackToTheIntentsTimeThenCreatesOnce() {
        var machine = RemoteBatchMachine(intent: intent(.uploaded))
        #expect(machine.handle(.start) == [.perform(.list(after: nil))], "a crash after upload may have left a created batch")
        let recent = RemoteBatchListing(entries: [.init(id: "batch_9", group: nil, createdAt: 10_100),
                                                  .init(id: "batch_8", group: "g7", createdAt: 9_500)], hasMore: true)
        #expect(machine.handle(.listed(recent)) == [.perform(.list(after: "batch_8"))])
        let older = RemoteBatchListing(entries: [.init(id: "batch_7", group: "g6", createdAt: 9_300)], hasMore: true)
        #expect(machine.handle(.listed(older)) == [.perform(.create)], "older than the intent (less slack): none of these can be ours")
        #expect(machine.handle(.listed(older)) == [], "one create, not two")
        var ended = RemoteBatchMachine(intent: intent(.uploaded))
        _ = ended.handle(.start)
        #expect(ended.handle(.listed(.init(entries: [], hasMore: false))) == [.perform(.create)])
    }

    /// A provider that commits each create, drops the answer and never lists the batch: a
    /// few creates, each later than the last, then none; the list is read on, and a batch
    /// of the group it shows at last is taken.
    @Test(arguments: [EndpointAPI.openai, .anthropic])
    func createsWhoseBatchNoListShowsAreFewAndSpacedOut(api: EndpointAPI) {
        var start = fresh
        start.api = api
        var machine = RemoteBatchMachine(intent: start)
        var actions = machine.handle(.start)
        if api == .openai { actions = machine.handle(.uploaded(fileID: "file-1")) }
        var creates = 0
        var createWaits: [Double] = []
        for _ in 0..<50 {
            if actions.contains(.perform(.create)) || actions.contains(where: { if case .wait(_, .create) = $0 { true } else { false } }) {
                creates += 1
                for case .wait(let seconds, .create) in actions { createWaits.append(seconds) }
                actions = machine.handle(.createUncertain)
            }
            #expect(!actions.contains(.perform(.create)), "a create that got no answer is followed by a list")
            actions = machine.handle(.listed(.init(entries: [], hasMore: false)))
        }
        #expect(creates == RemoteBatchMachine.maximumUnprovenCreates, "three creates in all, not one per round trip")
        #expect(createWaits == [4, 8], "each create again waits longer")
        #expect(actions.contains(.wait(seconds: 30, then: .list(after: nil))), "then the list is read at the poll interval")
        guard api == .openai else { return }
        let found = machine.handle(.listed(.init(entries: [.init(id: "batch_late", group: "g1", createdAt: 10_001)], hasMore: false)))
        #expect(recorded(found)?.batchID == "batch_late" && recorded(found)?.state == .created)
    }

    /// OpenAI's list whose pages lead back to one read: it cannot say there is no batch of
    /// the group, so nothing is created; it is read again later, from the start.
    @Test func anOpenAIListThatRepeatsItselfCreatesNothing() {
        var machine = RemoteBatchMachine(intent: intent(.uploaded))
        #expect(machine.handle(.start) == [.perform(.list(after: nil))])
        let page = RemoteBatchListing(entries: [.init(id: "batch_stranger", group: "g9", createdAt: 10_100)], hasMore: true)
        #expect(machine.handle(.listed(page)) == [.perform(.list(after: "batch_stranger"))])
        let again = machine.handle(.listed(page))
        #expect(!again.contains(.perform(.create)) && !again.contains(.perform(.list(after: "batch_stranger"))))
        #expect(again.last == .wait(seconds: 2, then: .list(after: nil)))
        #expect(machine.handle(.listed(page)) == [.perform(.list(after: "batch_stranger"))], "read again from the start")
        let looped = machine.handle(.listed(page))
        #expect(looped.last == .wait(seconds: 4, then: .list(after: nil)), "and later each time")
    }

    @Test func aProvidersRetryAfterIsHonouredUpToTheLimit() {
        var machine = RemoteBatchMachine(intent: intent(.polling, batch: "batch_1"), schedule: PollSchedule(maximumRetryAfter: 3))
        #expect(machine.handle(.start).last == .perform(.poll))
        #expect(machine.handle(.failed(retryable: true, retryAfter: 99_999_999_999, message: "429")) == [.wait(seconds: 3, then: .poll)])
        #expect(machine.handle(.failed(retryable: true, retryAfter: 8, message: "429")) == [.wait(seconds: 4, then: .poll)], "the backoff, not the 8 s asked")
    }

    /// A poll or download told "not found" again and again can never bring the answers:
    /// the group is abandoned (its requests go live) after `maximumGone` in a row, and a
    /// step that went through in between starts the count again.
    @Test func aBatchOrFileGoneFiveTimesInARowAbandonsTheGroup() {
        var machine = RemoteBatchMachine(intent: intent(.polling, batch: "batch_1"))
        #expect(machine.handle(.start).last == .perform(.poll))
        #expect(machine.handle(.gone(message: "the poll answered HTTP 404")) == [.wait(seconds: 2, then: .poll)])
        #expect(machine.handle(.failed(retryable: true, retryAfter: nil, message: "500")) == [.wait(seconds: 4, then: .poll)], "a 500 between proves nothing")
        #expect(machine.handle(.gone(message: "404")) == [.wait(seconds: 8, then: .poll)])
        #expect(machine.handle(.polled(RemoteBatchStatus(status: "in_progress", total: 2, completed: 0))).last?.isWait == true, "found again")
        for _ in 1..<RemoteBatchMachine.maximumGone {
            #expect(machine.handle(.gone(message: "404")).last?.isWait == true)
        }
        #expect(machine.handle(.gone(message: "the poll answered HTTP 404")) == [.abandon(message: "the poll answered HTTP 404 (5 times in a row)")])
        #expect(machine.handle(.gone(message: "404")) == [], "nothing pending after the abandonment")

        var download = RemoteBatchMachine(intent: intent(.ended, batch: "batch_1", output: "file-out"))
        #expect(download.handle(.start).last == .perform(.download(outputFileID: "file-out", errorFileID: nil)))
        for _ in 1..<RemoteBatchMachine.maximumGone { _ = download.handle(.gone(message: "410")) }
        #expect(download.handle(.gone(message: "410")) == [.abandon(message: "410 (5 times in a row)")])
    }

    @Test func failedCreatesMapToUncertainUnlessTheAnswerProvesNothingWasCreated() {
        #expect(RemoteBatchMachine.eventForFailedCreate(status: nil, retryAfter: nil, message: "reset") == .createUncertain)
        #expect(RemoteBatchMachine.eventForFailedCreate(status: 500, retryAfter: nil, message: "x") == .createUncertain)
        #expect(RemoteBatchMachine.eventForFailedCreate(status: 408, retryAfter: nil, message: "x") == .createUncertain)
        #expect(RemoteBatchMachine.eventForFailedCreate(status: 429, retryAfter: 3, message: "x") == .failed(retryable: true, retryAfter: 3, message: "x"))
        #expect(RemoteBatchMachine.eventForFailedCreate(status: 400, retryAfter: nil, message: "x") == .failed(retryable: false, retryAfter: nil, message: "x"))
    }

    @Test func aRetryableFailureRepeatsTheSameStepAfterABackoffOrRetryAfter() {
        var machine = RemoteBatchMachine(intent: fresh)
        _ = machine.handle(.start)
        #expect(machine.handle(.failed(retryable: true, retryAfter: nil, message: "500")) == [.wait(seconds: 2, then: .upload)])
        #expect(machine.handle(.failed(retryable: true, retryAfter: nil, message: "500")) == [.wait(seconds: 4, then: .upload)])
        #expect(machine.handle(.failed(retryable: true, retryAfter: 30, message: "429")) == [.wait(seconds: 30, then: .upload)])
        for _ in 0..<40 { _ = machine.handle(.failed(retryable: true, retryAfter: nil, message: "500")) }
        #expect(machine.handle(.failed(retryable: true, retryAfter: nil, message: "500")) == [.wait(seconds: RemoteBatchMachine.maximumBackoff, then: .upload)])
        #expect(machine.handle(.uploaded(fileID: "f")).last == .perform(.create))
        #expect(machine.handle(.failed(retryable: true, retryAfter: nil, message: "429")) == [.wait(seconds: 2, then: .create)], "a new step starts its backoff again")
        #expect(machine.handle(.failed(retryable: false, retryAfter: nil, message: "400 bad file")) == [.abandon(message: "400 bad file")])
        #expect(machine.handle(.failed(retryable: true, retryAfter: nil, message: "late")) == [], "nothing is pending after abandoning")
    }

    @Test func aBatchThatEndsWithoutFilesIsAbandoned() {
        var machine = RemoteBatchMachine(intent: intent(.polling, batch: "batch_1"))
        #expect(machine.handle(.start) == [.perform(.poll)])
        let actions = machine.handle(.polled(.init(status: "failed")))
        #expect(recorded(actions)?.remoteStatus == "failed")
        #expect(actions.last == .abandon(message: "the remote batch batch_1 ended failed without an output or error file"))
    }

    @Test func aGroupWhoseMembersAreAllDeletedIsCancelledOnceAndPolledToItsEnd() {
        var machine = RemoteBatchMachine(intent: intent(.polling, batch: "batch_1"))
        #expect(machine.handle(.start) == [.perform(.poll)])
        #expect(machine.handle(.withdrawn) == [.perform(.cancel)])
        #expect(machine.isWithdrawn)
        #expect(machine.handle(.withdrawn) == [], "one cancel")
        #expect(machine.handle(.polled(.init(status: "in_progress"))) == [], "a poll answer is not what the machine waits for now")
        #expect(machine.handle(.failed(retryable: true, retryAfter: 7, message: "503")) == [.wait(seconds: 7, then: .cancel)])
        #expect(machine.handle(.cancelRequested) == [.perform(.poll)])
        #expect(machine.handle(.polled(.init(status: "cancelling"))).last == .wait(seconds: 30, then: .poll))
        #expect(machine.handle(.polled(.init(status: "cancelled"))).last == .perform(.download(outputFileID: nil, errorFileID: nil)))
    }

    @Test func aRefusedCancelFallsBackToPolling() {
        var machine = RemoteBatchMachine(intent: intent(.created, batch: "batch_1"))
        _ = machine.handle(.start)
        #expect(machine.handle(.withdrawn) == [.perform(.cancel)])
        #expect(machine.handle(.failed(retryable: false, retryAfter: nil, message: "400 already completed")) == [.perform(.poll)])
        #expect(machine.handle(.polled(.init(status: "completed", outputFileID: "o"))).last == .perform(.download(outputFileID: "o", errorFileID: nil)))
    }

    @Test func aWithdrawalBeforeTheBatchIdIsKnownCancelsItOnceLearnt() {
        var created = RemoteBatchMachine(intent: intent(.uploaded))
        #expect(created.handle(.start) == [.perform(.list(after: nil))])
        #expect(created.handle(.withdrawn) == [], "a create may be committed: wait for its id")
        let adopted = created.handle(.listed(.init(entries: [.init(id: "batch_9", group: "g1", createdAt: 10_000)], hasMore: false)))
        #expect(recorded(adopted)?.batchID == "batch_9" && adopted.last == .perform(.cancel))

        var uncertain = RemoteBatchMachine(intent: intent(.intent))
        _ = uncertain.handle(.start)
        _ = uncertain.handle(.uploaded(fileID: "f"))
        #expect(uncertain.handle(.createUncertain) == [.perform(.list(after: nil))])
        #expect(uncertain.handle(.withdrawn) == [])
        let found = uncertain.handle(.listed(.init(entries: [.init(id: "batch_2", group: "g1", createdAt: 10_000)], hasMore: false)))
        #expect(recorded(found)?.state == .created && found.last == .perform(.cancel))

        var none = RemoteBatchMachine(intent: intent(.uploaded))
        _ = none.handle(.start)
        _ = none.handle(.withdrawn)
        #expect(none.handle(.listed(.init(entries: [.init(id: "other", group: "g2", createdAt: 10_000)], hasMore: false)))
                == [.abandon(message: "every request of the group was deleted and no batch of it exists")], "nothing is created for nobody")
    }

    @Test func aWithdrawalWhileACreateWaitsMakesNoBatch() {
        var machine = RemoteBatchMachine(intent: intent(.intent))
        _ = machine.handle(.start)
        _ = machine.handle(.uploaded(fileID: "f"))
        #expect(machine.handle(.failed(retryable: true, retryAfter: 5, message: "429")) == [.wait(seconds: 5, then: .create)])
        #expect(machine.handle(.withdrawn) == [.abandon(message: "every request of the group was deleted before its batch was created")])
        #expect(machine.handle(.created(batchID: "late")) == [], "nothing pending")
    }

    @Test func aWithdrawalWithNothingRemoteEndsTheGroupAndOneAfterTheEndChangesNothing() {
        var early = RemoteBatchMachine(intent: intent(.intent))
        _ = early.handle(.start)
        #expect(early.handle(.withdrawn) == [.abandon(message: "every request of the group was deleted before anything remote existed")])
        #expect(early.handle(.uploaded(fileID: "f")) == [], "nothing pending after it")
        for state in [RemoteBatchState.ended, .downloaded, .split] {
            var late = RemoteBatchMachine(intent: intent(state, batch: "b", output: "o"))
            let first = late.handle(.start)
            #expect(late.handle(.withdrawn) == [], "\(state): over remotely, the answers are discarded as they are published")
            #expect(first.count == 1)
        }
    }

    @Test func anExpiredOrCancelledBatchWithoutFilesStillEndsEachMembersWait() {
        for status in ["expired", "cancelled"] {
            var machine = RemoteBatchMachine(intent: intent(.polling, batch: "batch_1"))
            _ = machine.handle(.start)
            let actions = machine.handle(.polled(.init(status: status, total: 2)))
            #expect(recorded(actions)?.state == .ended && recorded(actions)?.remoteStatus == status)
            #expect(actions.last == .perform(.download(outputFileID: nil, errorFileID: nil)), "\(status): nothing to download, every member to judge")
        }
    }

    @Test func anExpiredBatchDownloadsWhatItHas() {
        var machine = RemoteBatchMachine(intent: intent(.polling, batch: "batch_1"))
        _ = machine.handle(.start)
        #expect(machine.handle(.polled(.init(status: "expired", total: 2, completed: 1, outputFileID: "o", errorFileID: "e"))).last
                == .perform(.download(outputFileID: "o", errorFileID: "e")))
    }

    @Test func recoveryResumesEveryStateWithoutRepeatingARemoteCreate() {
        #expect(RemoteBatchRecovery.firstStep(of: intent(.intent)) == .upload)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.uploaded)) == .list(after: nil))
        #expect(RemoteBatchRecovery.firstStep(of: intent(.created, batch: "b")) == .poll)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.polling, batch: "b")) == .poll)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.created, batch: nil)) == .list(after: nil), "a record that lost its id reconciles")
        #expect(RemoteBatchRecovery.firstStep(of: intent(.ended, batch: "b", output: "o", error: "e")) == .download(outputFileID: "o", errorFileID: "e"))
        #expect(RemoteBatchRecovery.firstStep(of: intent(.downloaded, batch: "b")) == .split)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.split, batch: "b")) == .publish)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.published, batch: "b")) == nil)
        for state in RemoteBatchState.allCases {
            #expect(RemoteBatchRecovery.firstStep(of: intent(state, batch: "b")) != .create, "\(state)")
        }
        var done = RemoteBatchMachine(intent: intent(.published, batch: "b"))
        #expect(done.handle(.start) == [.finish])
    }

    @Test func pollingBacksOffWhileNothingMovesAndComesBackWhenItDoes() {
        var schedule = PollSchedule()
        let still = RemoteBatchStatus(status: "in_progress", total: 10, completed: 3)
        #expect(schedule.next(after: still) == 30)
        #expect(schedule.next(after: still) == 60)
        #expect(schedule.next(after: still) == 120)
        #expect(schedule.next(after: still) == 240)
        #expect(schedule.next(after: still) == 480)
        #expect(schedule.next(after: still) == 600)
        #expect(schedule.next(after: still) == 600)
        #expect(schedule.next(after: .init(status: "in_progress", total: 10, completed: 4)) == 30)
        let odd = PollSchedule(initial: 0, maximum: -1)
        #expect(odd.initial == 1 && odd.maximum == 1)
    }

    @Test func statesAreOrderedAsTheLife() {
        #expect(RemoteBatchState.allCases.map(\.rawValue) == ["intent", "uploaded", "creating", "created", "polling", "ended", "downloaded", "split", "published"])
        #expect(RemoteBatchState.intent < .uploaded && RemoteBatchState.split < .published)
    }
}

extension RemoteBatchMachine.Action {
    var isWait: Bool { if case .wait = self { true } else { false } }
}
