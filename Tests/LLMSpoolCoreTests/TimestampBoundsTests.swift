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
