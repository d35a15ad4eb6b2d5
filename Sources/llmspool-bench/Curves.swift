import Foundation
import Glibc
import LLMSpoolCore

/// How the daemon's cost grows with size: streams held at once, and a backlog waiting at
/// start, each at three sizes. Writes one CSV per scenario (with the load average each
/// point ran under) into a folder, and draws them with gnuplot when it is installed.
enum Curves {
    struct Point {
        var size: Int
        var wall: Double
        var cpuPerRequest: Double
        var rss: Double
        var failed: Int
        var load: Double
    }

    static let header = "size,wall_s,cpu_ms_per_request,peak_rss_mib,failed,load1"

    static func loadAverage() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return .nan }
        return Double(text.split(separator: " ").first ?? "") ?? .nan
    }

    /// `size` streams dropped at once, each held `hold` seconds by the stub, one token a second.
    static func streams(_ size: Int, hold: Int) throws -> Point {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        try fixture.startDaemon(concurrency: size + 10)
        let pid = fixture.daemon!.processIdentifier
        let stub: [String: Any] = ["tokens": hold, "token_delay_ms": 1000]
        let ids = try fixture.stage(size, prefix: "c-") { Scenarios.request("curve \($0)", stream: true, stub: stub) }
        let load = loadAverage()
        let cpu0 = ProcessStats.cpuSeconds(pid)
        let start = Date()
        try fixture.drop(ids)
        let end = try fixture.waitForResults(size, timeout: Double(hold) * 20 + 120)
        return Point(size: size, wall: end.timeIntervalSince(start), cpuPerRequest: (ProcessStats.cpuSeconds(pid) - cpu0) / Double(size) * 1000,
                     rss: ProcessStats.peakRSSMiB(pid), failed: failedCount(fixture), load: load)
    }

    /// `size` plain requests already in outgoing when the daemon starts, at concurrency 64.
    static func backlog(_ size: Int, concurrency: Int) throws -> Point {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        let ids = try fixture.stage(size, prefix: "b-") { Scenarios.request("backlog \($0)") }
        try fixture.drop(ids)
        sync()
        let load = loadAverage()
        let start = Date()
        try fixture.startDaemon(concurrency: concurrency)
        let pid = fixture.daemon!.processIdentifier
        let end = try fixture.waitForResults(size, timeout: 7200)
        // The daemon's whole CPU: its start (which reads the backlog) belongs to the cost.
        return Point(size: size, wall: end.timeIntervalSince(start), cpuPerRequest: ProcessStats.cpuSeconds(pid) / Double(size) * 1000,
                     rss: ProcessStats.peakRSSMiB(pid), failed: failedCount(fixture), load: load)
    }

    static func failedCount(_ fixture: Fixture) -> Int {
        ((try? Syscall.listDirectoryRaw(fixture.layout.failed)) ?? []).filter { $0.count > 11 && Array($0.suffix(11)) == Array(".error.json".utf8) }.count
    }

    static func csv(_ points: [Point]) -> String {
        ([header] + points.map {
            String(format: "%d,%.2f,%.3f,%.1f,%d,%.2f", $0.size, $0.wall, $0.cpuPerRequest, $0.rss, $0.failed, $0.load)
        }).joined(separator: "\n") + "\n"
    }

    /// Runs both curves, writes `streams.csv` and `backlog.csv` into `folder` (each point as
    /// it is measured, so a long run that is stopped keeps what it had), then the PNGs.
    static func run(folder: String, streamSizes: [Int], backlogSizes: [Int], hold: Int, concurrency: Int) throws -> [Figure] {
        var figures: [Figure] = []
        for (name, sizes, measure) in [("streams", streamSizes, { try streams($0, hold: hold) }),
                                       ("backlog", backlogSizes, { try backlog($0, concurrency: concurrency) })] as [(String, [Int], (Int) throws -> Point)] {
            var points: [Point] = []
            for size in sizes {
                FileHandle.standardError.write(Data("curve \(name) at \(size)...\n".utf8))
                sync()
                let point = try measure(size)
                points.append(point)
                try DurableFile.write(Array(csv(points).utf8), to: "\(folder)/\(name).csv")
                let label = "\(name) \(size) (load \(String(format: "%.1f", point.load)))"
                figures += [
                    Figure(scenario: "curve", metric: "\(label): wall s", llmspool: point.wall, raw: nil, urlSession: nil, target: "-", met: nil),
                    Figure(scenario: "curve", metric: "\(label): daemon CPU ms/request", llmspool: point.cpuPerRequest, raw: nil, urlSession: nil, target: "-", met: nil),
                    Figure(scenario: "curve", metric: "\(label): daemon peak RSS MiB", llmspool: point.rss, raw: nil, urlSession: nil, target: "-", met: nil),
                ]
            }
        }
        plot(folder: folder)
        return figures
    }

    /// Draws the PNGs with `curves.gp` in the folder; without gnuplot the CSVs stand alone.
    static func plot(folder: String) {
        guard let gnuplot = (["/usr/bin/gnuplot", "/usr/local/bin/gnuplot"] as [String]).first(where: { access($0, X_OK) == 0 }) else {
            FileHandle.standardError.write(Data("llmspool-bench: gnuplot is not installed (Debian gnuplot-nox): CSV written, no plots\n".utf8))
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gnuplot)
        process.arguments = ["curves.gp"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        do {
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus != 0 {
                FileHandle.standardError.write(Data("llmspool-bench: gnuplot curves.gp exited with \(process.terminationStatus)\n".utf8))
            }
        } catch {
            FileHandle.standardError.write(Data("llmspool-bench: cannot run gnuplot: \(error)\n".utf8))
        }
    }
}
