import Foundation
import Testing
@testable import LLMSpoolCore

/// A time read from a file (a record's, a journal's) may be any number: formatting it as
/// a record's timestamp never traps.
@Suite struct TimestampBoundsTests {
    @Test(arguments: [-9.2e18, 9.2e18, 1e300, -1e300, Double.infinity, -Double.infinity, Double.nan])
    func anyTimeFormatsWithoutATrap(seconds: Double) {
        let text = Timestamp.string(Date(timeIntervalSince1970: seconds))
        #expect(text.hasSuffix("Z") && text.contains("T"), "\(text)")
    }

    @Test func anOrdinaryTimeIsUnchanged() {
        #expect(Timestamp.string(Date(timeIntervalSince1970: 1_796_169_600.123)) == "2026-12-02T00:00:00.123Z")
    }
}

/// A batch's progress whose start came from a journal holding any number is shown and
/// written without a trap.
@Suite struct BatchProgressBoundsTests {
    @Test(arguments: [Double(Int.max), -1e300, 1e300])
    func aStartOfAnyNumberNeverTraps(startedAt: Double) throws {
        let progress = BatchProgress(name: "b", total: 1_000_000, succeeded: 1, failed: 0, inFlight: 0, startedAt: startedAt,
                                     updatedAt: Date().timeIntervalSince1970, cancelled: false)
        #expect(progress.line().hasPrefix("b: 1/1000000 done"))
        #expect(try JSONSerialization.jsonObject(with: Data(progress.json())) is [String: Any])
    }
}
