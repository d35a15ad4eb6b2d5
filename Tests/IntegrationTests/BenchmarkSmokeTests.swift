import Foundation
import LLMSpoolStub
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
        #expect(figures.count == 18)
        // P1's disk-ceiling probe ran in the same run, and its ratio is a measured number.
        let probe = figures.first { ($0["metric"] as? String)?.hasPrefix("completed/s / disk-ceiling probe") == true }
        #expect((probe?["llmspool"] as? Double).map { $0 > 0 } == true, "the probe's ratio: \(String(describing: probe))")
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
        #expect(figures.count == 5)
        let answered = try #require(figures.first { ($0["metric"] as? String)?.hasPrefix("lines answered") == true })
        #expect(answered["met"] as? Bool == true, "both answered every line: \(answered)")
        #expect(figures.allSatisfy { ($0["raw"] as? Double).map { $0 > 0 } == true }, "every figure of the cookbook was measured")
    }

    static var bench: String { URL(fileURLWithPath: Harness.binary).deletingLastPathComponent().appendingPathComponent("llmspool-bench").path }

    /// P6 in smoke mode: 40 streams through nghttpx, every one over h2 on one connection.
    @Test func theHTTPSScenarioRunsInSmokeMode() throws {
        if let missing = TLSFront.missing {
            if SDKJudge.mustRun { Issue.record("\(missing); .ci/deps --test installs it") } else { print("skipped: \(missing)") }
            return
        }
        let json = NSTemporaryDirectory() + "llmspool-bench-p6-\(getpid()).json"
        defer {
            unlink(json)
            unlink(json + ".meta")
        }
        let finished = try Harness.spawnAndWait([Self.bench, "--smoke", "--scenarios", "P6", "--json", json])
        #expect(finished.status == 0, "\(finished.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        func figure(_ prefix: String) -> [String: Any]? { figures.first { ($0["metric"] as? String)?.hasPrefix(prefix) == true } }
        #expect(figure("requests over h2")?["llmspool"] as? Double == 40)
        #expect(figure("requests over h2")?["raw"] as? Double == 40)
        #expect(figure("TCP connections, HTTP/2")?["met"] as? Bool == true, "\(String(describing: figure("TCP connections, HTTP/2")))")
        #expect(figure("TCP connections, HTTP/1.1")?["llmspool"] as? Double ?? 0 > 1)
        #expect(figure("requests without an answer")?["llmspool"] as? Double == 0)
        #expect(figure("requests without an answer")?["raw"] as? Double == 0)
        #expect(figures.allSatisfy { ($0["llmspool"] as? Double)?.isFinite == true }, "every figure was measured")
    }

    /// B4 in smoke mode: a small batch file whose lines all go through the background lane,
    /// in one remote batch, every line answered from it.
    @Test func theBackgroundLaneScenarioRunsInSmokeMode() throws {
        let json = NSTemporaryDirectory() + "llmspool-bench-b4-\(getpid()).json"
        defer {
            unlink(json)
            unlink(json + ".meta")
        }
        let finished = try Harness.spawnAndWait([Self.bench, "--smoke", "--scenarios", "B4", "--json", json])
        #expect(finished.status == 0, "\(finished.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        #expect(figures.count == 4)
        func figure(_ prefix: String) -> [String: Any]? { figures.first { ($0["metric"] as? String)?.hasPrefix(prefix) == true } }
        #expect(figure("remote batches created")?["llmspool"] as? Double == 1, "\(figures)")
        #expect((figure("daemon peak RSS MiB")?["llmspool"] as? Double).map { $0 > 0 } == true)
        #expect(figures.allSatisfy { ($0["llmspool"] as? Double)?.isFinite == true }, "every figure was measured")
    }

    /// The curves in smoke mode: two CSVs of two points each, and their PNGs when gnuplot is here.
    @Test func theCurvesAreWrittenAsCSVAndDrawn() throws {
        let folder = NSTemporaryDirectory() + "llmspool-curves-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../bench/plots/curves.gp").path
        try FileManager.default.copyItem(atPath: script, toPath: folder + "/curves.gp")
        let finished = try Harness.spawnAndWait([Self.bench, "--smoke", "--curves", folder])
        #expect(finished.status == 0, "\(finished.stderr)")
        for name in ["streams", "backlog"] {
            let lines = try String(contentsOfFile: "\(folder)/\(name).csv", encoding: .utf8).split(separator: "\n")
            #expect(lines.first == "size,wall_s,cpu_ms_per_request,peak_rss_mib,failed,load1")
            #expect(lines.dropFirst().map { $0.split(separator: ",").first.map(String.init) } == (name == "streams" ? ["10", "20"] : ["100", "200"]))
            #expect(lines.dropFirst().allSatisfy { $0.split(separator: ",")[4] == "0" }, "\(name): every request answered")
            if TLSFront.which("gnuplot") != nil {
                #expect(FileManager.default.fileExists(atPath: "\(folder)/\(name).png"), "gnuplot drew \(name).png")
            }
        }
    }
}
