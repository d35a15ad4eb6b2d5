import FoundationEssentials
import Testing
@testable import LLMSpoolModel

/// Starts counted in the record; three unfinished in a row fail the request.
@Suite struct CrashGuardTests {
    let history = TaskHistory(firstSeen: Date(timeIntervalSince1970: 0))

    @Test func threeUnfinishedStartsFail() {
        var next = history
        for _ in 0..<CrashGuard.limit {
            #expect(!CrashGuard.mustFail(next))
            next = CrashGuard.starting(next)
        }
        #expect(next.unfinishedStarts == 3)
        #expect(CrashGuard.mustFail(next))
    }

    @Test func anEndedAttemptClearsTheCount() {
        let twice = CrashGuard.starting(CrashGuard.starting(history))
        let ended = CrashGuard.ended(twice)
        #expect(ended.unfinishedStarts == 0)
        #expect(!CrashGuard.mustFail(CrashGuard.starting(CrashGuard.starting(ended))))
    }

    @Test func anyRecordedNumberStaysBounded() {
        var odd = history
        odd.unfinishedStarts = Int.max
        #expect(CrashGuard.starting(odd).unfinishedStarts == CrashGuard.limit + 1)
        odd.unfinishedStarts = Int.min
        #expect(CrashGuard.starting(odd).unfinishedStarts == 1)
    }

    @Test func aCrashLoopIsAFinalFailure() {
        guard case .failure(let failure)? = AttemptJudge.judgeEnding(.crashLoop(starts: 3), bodyPrefix: { [] }) else {
            Issue.record("not a failure")
            return
        }
        #expect(failure.kind == .crashLoop)
        #expect(!RetryPolicy.isRetryable(failure, headers: ["x-should-retry": "true"]))
        #expect(!RetryPolicy.isRetryable(failure, headers: [:]))
    }
}

/// Numbers read back from a task record cannot index outside the endpoint list.
@Suite struct RecordedNumberTests {
    @Test(arguments: [-1, -7, Int.min + 1, Int.max]) func anyPreferredEndpointIndexesTheList(preferred: Int) {
        var task = TaskDescriptor(id: "a", requestPath: "/x/a.json", summary: RequestSummary(model: "m", stream: false, size: 1))
        task.history.preferredEndpoint = preferred
        var scheduler = Scheduler(concurrency: 2, gates: [EndpointGate(concurrency: 2, now: 0), EndpointGate(concurrency: 2, now: 0)])
        let actions = scheduler.handle(.arrived(.valid(task)), now: 0)
        #expect(actions.contains { if case .start(let started, _) = $0 { started.id == "a" } else { false } })
    }
}

@Suite struct TokenCountTests {
    @Test func sumsSaturate() {
        #expect(TokenCount.sum(Int.max, 1) == Int.max)
        #expect(TokenCount.sum(Int.min, -1) == Int.min)
        #expect(TokenCount.sum(2, 3) == 5)
    }
}
