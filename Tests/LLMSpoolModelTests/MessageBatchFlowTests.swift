import Testing
@testable import LLMSpoolModel

/// `RemoteBatchMachine`'s Anthropic flow: no upload, `creating` recorded before the create,
/// and reconciling by the list's sizes and the first results line's custom_id, at every
/// point a daemon can die.
@Suite struct MessageBatchFlowTests {
    let fresh = RemoteIntent(group: "g1", endpoint: "messages-batch", api: .anthropic, url: "/v1/messages", createdAt: 10_000,
                             members: [.init(id: "a", request: nil), .init(id: "b", request: nil)])

    func intent(_ state: RemoteBatchState, batch: String? = nil, results: String? = nil) -> RemoteIntent {
        var intent = fresh
        intent.state = state
        intent.batchID = batch
        intent.outputFileID = results
        return intent
    }

    func recorded(_ actions: [RemoteBatchMachine.Action]) -> RemoteIntent? {
        for case .record(let intent) in actions { return intent }
        return nil
    }

    func entry(_ id: String, at time: Int = 10_010, total: Int? = 2, ended: Bool = true) -> RemoteBatchListing.Entry {
        .init(id: id, group: nil, createdAt: time, total: total, ended: ended)
    }

    /// A machine whose create got no answer: it is reading the list.
    func reconciling(_ intent: RemoteIntent? = nil) -> RemoteBatchMachine {
        var machine = RemoteBatchMachine(intent: intent ?? self.intent(.creating))
        _ = machine.handle(.start)
        return machine
    }

    @Test func theWholeLifeRecordsCreatingBeforeTheCreateAndHasNoUpload() throws {
        var machine = RemoteBatchMachine(intent: fresh)
        let start = machine.handle(.start)
        #expect(start.count == 2 && start[1] == .perform(.create), "no upload: \(start)")
        #expect(try #require(recorded(start)).state == .creating, "recorded before the create is sent")
        #expect(machine.handle(.uploaded(fileID: "f")) == [], "no upload was asked for")
        let created = machine.handle(.created(batchID: "msgbatch_1"))
        #expect(recorded(created)?.state == .created && recorded(created)?.batchID == "msgbatch_1")
        #expect(created.last == .wait(seconds: 30, then: .poll))
        #expect(recorded(machine.handle(.polled(.init(status: "in_progress", total: 2))))?.state == .polling)
        let ended = machine.handle(.polled(.init(status: "completed", total: 2, completed: 2, outputFileID: "https://x/results")))
        #expect(recorded(ended)?.state == .ended)
        #expect(ended.last == .perform(.download(outputFileID: "https://x/results", errorFileID: nil)))
        #expect(recorded(machine.handle(.downloaded))?.state == .downloaded)
        #expect(machine.handle(.split).last == .perform(.publish))
        #expect(machine.handle(.published) == [.finish])
    }

    @Test func aRestartResumesEveryStateAndNeverCreatesFromCreating() {
        #expect(RemoteBatchRecovery.firstStep(of: intent(.intent)) == .create, "nothing was sent: create (after recording creating)")
        #expect(RemoteBatchRecovery.firstStep(of: intent(.creating)) == .list(after: nil), "the kill came after the create may have committed")
        #expect(RemoteBatchRecovery.firstStep(of: intent(.created, batch: "b")) == .poll)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.polling, batch: "b")) == .poll)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.created)) == .list(after: nil))
        #expect(RemoteBatchRecovery.firstStep(of: intent(.ended, batch: "b", results: "u")) == .download(outputFileID: "u", errorFileID: nil))
        #expect(RemoteBatchRecovery.firstStep(of: intent(.downloaded, batch: "b")) == .split)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.split, batch: "b")) == .publish)
        #expect(RemoteBatchRecovery.firstStep(of: intent(.published, batch: "b")) == nil)
        var openAI = fresh
        openAI.api = .openai
        #expect(RemoteBatchRecovery.firstStep(of: openAI) == .upload, "OpenAI's flow is unchanged")
        var machine = RemoteBatchMachine(intent: intent(.creating))
        #expect(machine.handle(.start) == [.perform(.list(after: nil))])
    }

    @Test func aLostCreateIsReconciledByTheListAndTheFirstResultsCustomID() {
        var machine = RemoteBatchMachine(intent: fresh)
        _ = machine.handle(.start)
        #expect(machine.handle(.createUncertain) == [.perform(.list(after: nil))])
        let page = RemoteBatchListing(entries: [entry("other_size", total: 3), entry("too_old", at: 9_000), entry("mine")], hasMore: false)
        #expect(machine.handle(.listed(page)) == [.perform(.inspect(batchID: "mine"))], "only a batch of the group's size made since the intent")
        #expect(machine.handle(.inspected(batchID: "other", group: "g1")) == [], "not the inspection asked for")
        let adopted = machine.handle(.inspected(batchID: "mine", group: "g1"))
        #expect(recorded(adopted)?.batchID == "mine" && recorded(adopted)?.state == .created)
        #expect(adopted.last == .perform(.poll))
    }

    @Test func aCandidateThatIsAnothersIsSkippedForGoodAndThenTheGroupIsCreatedWithAWarning() throws {
        var machine = reconciling()
        let page = RemoteBatchListing(entries: [entry("theirs"), entry("unsized", total: nil)], hasMore: false)
        #expect(machine.handle(.listed(page)) == [.perform(.inspect(batchID: "theirs"))])
        #expect(machine.handle(.inspected(batchID: "theirs", group: "g9")) == [.perform(.inspect(batchID: "unsized"))], "a size not given cannot rule it out")
        let create = machine.handle(.inspected(batchID: "unsized", group: nil))
        #expect(create.last == .perform(.create))
        guard case .warn(let message)? = create.first else { Issue.record("\(create)"); return }
        #expect(message.contains("paid twice"), "the provider cannot guard a create not yet listed: \(message)")
        #expect(machine.handle(.createUncertain) == [.perform(.list(after: nil))])
        #expect(machine.handle(.listed(page)).last == .wait(seconds: 4, then: .create),
                "a batch proved another's is not inspected again; the create after one that got no answer waits")
    }

    @Test func aCandidateStillRunningIsWaitedForThenInspected() {
        var machine = reconciling()
        let running = RemoteBatchListing(entries: [entry("maybe", ended: false)], hasMore: false)
        #expect(machine.handle(.listed(running)) == [.wait(seconds: 30, then: .list(after: nil))], "never a create while it may be the group's")
        let ended = RemoteBatchListing(entries: [entry("maybe")], hasMore: false)
        #expect(machine.handle(.listed(ended)) == [.perform(.inspect(batchID: "maybe"))])
        #expect(machine.handle(.failed(retryable: true, retryAfter: nil, message: "503")) == [.wait(seconds: 2, then: .inspect(batchID: "maybe"))])
        #expect(recorded(machine.handle(.inspected(batchID: "maybe", group: "g1")))?.batchID == "maybe")
    }

    @Test func pagesAreFollowedToTheHorizonAndAPageThatLoopsCreatesNothing() {
        var machine = reconciling()
        let first = RemoteBatchListing(entries: [entry("n2", total: 5), entry("n1", total: 5)], hasMore: true)
        #expect(machine.handle(.listed(first)) == [.perform(.list(after: "n1"))])
        let loop = machine.handle(.listed(RemoteBatchListing(entries: [entry("n1", total: 5)], hasMore: true)))
        #expect(loop.last == .wait(seconds: 2, then: .list(after: nil)), "\(loop)")
        guard case .warn(let message)? = loop.first else { Issue.record("\(loop)"); return }
        #expect(message.contains("repeats itself after n1"))
        #expect(!loop.contains(.perform(.create)))
        // Read again from the start: a loop across pages (back to an id already read) is one too.
        #expect(machine.handle(.listed(first)) == [.perform(.list(after: "n1"))])
        #expect(machine.handle(.listed(RemoteBatchListing(entries: [entry("n0", total: 5)], hasMore: true))) == [.perform(.list(after: "n0"))])
        #expect(machine.handle(.listed(RemoteBatchListing(entries: [entry("n1", total: 5)], hasMore: true))).last == .wait(seconds: 4, then: .list(after: nil)))
        // A page older than the intent ends the reading.
        #expect(machine.handle(.listed(first)) == [.perform(.list(after: "n1"))])
        #expect(machine.handle(.listed(RemoteBatchListing(entries: [entry("old", at: 1_000)], hasMore: true))).last == .perform(.create))
        // Nobody waits any more: a list that loops ends the group instead of holding it.
        var withdrawn = reconciling()
        _ = withdrawn.handle(.withdrawn)
        _ = withdrawn.handle(.listed(first))
        let ended = withdrawn.handle(.listed(RemoteBatchListing(entries: [entry("n1", total: 5)], hasMore: true)))
        guard case .abandon(let reason)? = ended.first, ended.count == 1 else { Issue.record("\(ended)"); return }
        #expect(reason.contains("repeats itself after n1"))
    }

    @Test func aCreateThatProvesNothingCommittedIsRetriedAndAWithdrawalThenMakesNoBatch() {
        var machine = RemoteBatchMachine(intent: fresh)
        _ = machine.handle(.start)
        let refused = RemoteBatchMachine.eventForFailedCreate(status: 429, retryAfter: 4, message: "429")
        #expect(machine.handle(refused) == [.wait(seconds: 4, then: .create)])
        #expect(machine.handle(.withdrawn) == [.abandon(message: "every request of the group was deleted before its batch was created")])
    }

    @Test func aWithdrawalWhileReconcilingCancelsTheBatchFoundOrEndsTheGroup() {
        var found = reconciling()
        #expect(found.handle(.withdrawn) == [], "the create may have committed: the list says")
        _ = found.handle(.listed(RemoteBatchListing(entries: [entry("mine")], hasMore: false)))
        let adopted = found.handle(.inspected(batchID: "mine", group: "g1"))
        #expect(recorded(adopted)?.batchID == "mine" && adopted.last == .perform(.cancel))

        var none = reconciling()
        _ = none.handle(.withdrawn)
        #expect(none.handle(.listed(RemoteBatchListing(entries: [], hasMore: false)))
                == [.abandon(message: "every request of the group was deleted and no batch of it exists")])

        var running = reconciling()
        _ = running.handle(.withdrawn)
        let actions = running.handle(.listed(RemoteBatchListing(entries: [entry("maybe", ended: false)], hasMore: false)))
        guard case .abandon(let message)? = actions.first, actions.count == 1 else { Issue.record("\(actions)"); return }
        #expect(message.contains("maybe") && message.contains("cannot be told apart"))
    }

    @Test func aWithdrawalAfterTheIdIsKnownCancels() {
        var machine = RemoteBatchMachine(intent: intent(.created, batch: "msgbatch_1"))
        #expect(machine.handle(.start) == [.perform(.poll)])
        #expect(machine.handle(.withdrawn) == [.perform(.cancel)])
        #expect(machine.handle(.cancelRequested) == [.perform(.poll)])
        #expect(machine.handle(.polled(.init(status: "cancelled", total: 2))).last == .perform(.download(outputFileID: nil, errorFileID: nil)))
    }

    @Test func theIntentRecordKeepsItsAPI() throws {
        let decoded = try RemoteIntent.decode(intent(.creating).encoded())
        #expect(decoded == intent(.creating))
        let old = #"{"group":"g","state":"uploaded","endpoint":"e","url":"u","created_at":1,"members":[]}"#
        #expect(try RemoteIntent.decode(Array(old.utf8)).api == .openai, "a record from before the field is OpenAI's")
        let odd = #"{"group":"g","state":"intent","endpoint":"e","api":"gemini","url":"u","created_at":1,"members":[]}"#
        #expect(throws: RemoteIntent.Problem(description: "an unknown api \"gemini\"")) { try RemoteIntent.decode(Array(odd.utf8)) }
    }
}
