import Foundation
import Testing

/// Keeps the benchmark harness working: its seconds-long smoke mode must run every
/// scenario and print every figure. Timings are not asserted here; they belong in
/// BENCHMARKS.md.
@Suite(.serialized) struct BenchmarkSmokeTests {
    @Test func theHarnessRunsEveryScenarioInSmokeMode() throws {
        let bench = URL(fileURLWithPath: Harness.binary).deletingLastPathComponent().appendingPathComponent("llmspool-bench").path
        let json = NSTemporaryDirectory() + "llmspool-bench-\(getpid()).json"
        defer {
            unlink(json)
            unlink(json + ".meta")
        }
        let finished = try Harness.spawnAndWait([bench, "--smoke", "--json", json])
        #expect(finished.status == 0, "\(finished.stderr)")
        for scenario in ["P1", "P2", "P3", "P4", "P5"] {
            #expect(finished.stdout.contains("| \(scenario) |"), "\(scenario) is in the table")
        }
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        #expect(figures.count == 15)
        let unanswered = figures.filter { ($0["metric"] as? String) == "requests without an answer" }
        #expect(unanswered.count == 2)
        #expect(unanswered.allSatisfy { ($0["llmspool"] as? Double) == 0 }, "the daemon answered every request")
        #expect(figures.allSatisfy { ($0["llmspool"] as? Double)?.isFinite == true }, "every figure was measured")
    }
}
