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

    /// B3 needs the cookbook's script, which is not in the repository: it runs when
    /// LLMSPOOL_COOKBOOK_SCRIPT names it and bench/cookbook-venv has made the venv.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["LLMSPOOL_COOKBOOK_SCRIPT"] != nil, "LLMSPOOL_COOKBOOK_SCRIPT is not set"))
    func theCookbookScenarioRunsInSmokeMode() throws {
        let bench = URL(fileURLWithPath: Harness.binary).deletingLastPathComponent().appendingPathComponent("llmspool-bench").path
        let script = try #require(ProcessInfo.processInfo.environment["LLMSPOOL_COOKBOOK_SCRIPT"])
        let json = NSTemporaryDirectory() + "llmspool-bench-b3-\(getpid()).json"
        defer {
            unlink(json)
            unlink(json + ".meta")
        }
        let finished = try Harness.spawnAndWait([bench, "--smoke", "--scenarios", "B3", "--cookbook-script", script, "--json", json])
        #expect(finished.status == 0, "\(finished.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        #expect(figures.count == 4)
        let answered = try #require(figures.first { ($0["metric"] as? String)?.hasPrefix("lines answered") == true })
        #expect(answered["met"] as? Bool == true, "both answered every line: \(answered)")
        #expect(figures.allSatisfy { ($0["raw"] as? Double).map { $0 > 0 } == true }, "every figure of the cookbook was measured")
    }
}
