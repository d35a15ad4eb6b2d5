import Testing
@testable import LLMSpoolModel

/// A daemon woken past its lease sends no line of a batch before it knows the claim is still its own.
@Suite struct BatchLineStartTests {
    @Test func withoutLeaseFilesALineAlwaysStarts() {
        for expiry: Double? in [nil, 0, 100, .nan] {
            #expect(BatchLineStart.decide(leaseFilesOnly: false, leaseExpiresAt: expiry, now: 1_000) == .start)
        }
    }

    @Test func aLineStartsWhileTheLeaseAsLastWrittenHolds() {
        #expect(BatchLineStart.decide(leaseFilesOnly: true, leaseExpiresAt: 1_003, now: 1_000) == .start)
        #expect(BatchLineStart.decide(leaseFilesOnly: true, leaseExpiresAt: 1_000.001, now: 1_000) == .start)
    }

    @Test func pastItsLeaseOrWithoutTheClaimALineWaits() {
        let wait = BatchLineStart.Decision.wait(seconds: BatchLineStart.waitSeconds)
        #expect(BatchLineStart.decide(leaseFilesOnly: true, leaseExpiresAt: 1_000, now: 1_000) == wait, "expired at this very moment")
        #expect(BatchLineStart.decide(leaseFilesOnly: true, leaseExpiresAt: 990, now: 1_000) == wait, "woken after a pause past the lease")
        #expect(BatchLineStart.decide(leaseFilesOnly: true, leaseExpiresAt: nil, now: 1_000) == wait, "the claim is not held here")
        #expect(BatchLineStart.decide(leaseFilesOnly: true, leaseExpiresAt: .nan, now: 1_000) == wait)
        #expect(BatchLineStart.decide(leaseFilesOnly: true, leaseExpiresAt: .infinity, now: 1_000) == wait, "no number makes a lease last for ever")
        #expect(BatchLineStart.waitSeconds > 0)
    }

    @Test func aCheckedLineWhoseCallReturnedPastItsLeaseMayHaveGoneLate() {
        #expect(!BatchLineStart.mayHaveGoneLate(leaseFilesOnly: true, checkedUntil: 1_003, returnedAt: 1_000.01), "sent at once")
        #expect(BatchLineStart.mayHaveGoneLate(leaseFilesOnly: true, checkedUntil: 1_003, returnedAt: 1_003), "returned as the lease ran out")
        #expect(BatchLineStart.mayHaveGoneLate(leaseFilesOnly: true, checkedUntil: 1_003, returnedAt: 1_040), "paused between check and send")
        #expect(BatchLineStart.mayHaveGoneLate(leaseFilesOnly: true, checkedUntil: .nan, returnedAt: 1_000), "a number that says nothing is told")
        #expect(!BatchLineStart.mayHaveGoneLate(leaseFilesOnly: false, checkedUntil: 1_003, returnedAt: 1_040), "a lock keeps the claim through a pause")
    }
}
