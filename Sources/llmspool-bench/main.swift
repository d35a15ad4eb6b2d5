import Foundation
import Glibc
import LLMSpoolCore

// llmspool-bench: runs the stub and the daemon on a temporary spool through the five
// scenarios, with a raw libcurl client and a URLSession client beside it, and prints
// one table (medians of --runs) and the same figures as JSON.

let usage = """
Usage: llmspool-bench [--smoke] [--runs N] [--scenarios P1,P2,P3,P4,P5] [--json FILE] [--scale F]
                      [--cookbook-script PATH] [--cookbook-python PATH] [--p6 STREAMSxSECONDS] [--curves FOLDER]

Build it in release mode: swift build -c release && .build/release/llmspool-bench
--smoke runs tiny sizes once (seconds), to keep the harness working in CI.
--scale F multiplies the request counts of P1, P2, P3 and P5 and P4's size (default 1).
B1 (a 100,000-line batch against the same requests as single files) and B2 (the daemon's
memory over a million-line batch) run only when named: --scenarios B1,B2.
B4 (a 50,000-line batch file whose lines all go through the background lane in one
remote batch on the stub: the daemon's peak memory from grouping to split) runs only when named.
B3 (a batch through the daemon and through the openai-cookbook's
api_request_parallel_processor.py, against one stub) runs only when named, and needs the
script's path (--cookbook-script; it is in the openai/openai-cookbook repository, examples/)
and the venv bench/cookbook-venv makes (--cookbook-python, default
$LLMSPOOL_BENCH_VENV/bin/python, /opt/llmspool-bench/bin/python).
P6 (streams over HTTPS with HTTP/2 through nghttpx, Debian nghttp2-proxy) runs when named;
--p6 5000x20 sets its streams and their seconds (the default).
--curves FOLDER measures streams (100, 1,000, 10,000; --scale applies) and a backlog (1,000,
10,000, 100,000) once each, writes FOLDER/streams.csv and FOLDER/backlog.csv and runs
FOLDER/curves.gp with gnuplot (Debian gnuplot-nox) for the PNGs; no other scenario runs.
"""

var arguments = Array(CommandLine.arguments.dropFirst())
var sizes = Sizes()
var runs = 3
var selected = ["P1", "P2", "P3", "P4", "P5"]
var jsonPath: String?
var scale = 1.0
var curvesFolder: String?
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--smoke":
        sizes = .smoke
        runs = 1
    case "--runs": runs = Int(arguments.removeFirst()) ?? runs
    case "--scenarios": selected = arguments.removeFirst().uppercased().split(separator: ",").map(String.init)
    case "--json": jsonPath = arguments.removeFirst()
    case "--scale": scale = Double(arguments.removeFirst()) ?? 1
    case "--cookbook-script": Scenarios.cookbook.script = arguments.removeFirst()
    case "--cookbook-python": Scenarios.cookbook.python = arguments.removeFirst()
    case "--curves": curvesFolder = arguments.removeFirst()
    case "--p6":
        let parts = arguments.removeFirst().lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts.allSatisfy({ $0 > 0 && $0 < 1_000_000 }) else {
            FileHandle.standardError.write(Data("llmspool-bench: --p6 takes STREAMSxSECONDS, such as 5000x20\n".utf8))
            exit(2)
        }
        (sizes.p6Streams, sizes.p6HoldSeconds) = (parts[0], parts[1])
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("llmspool-bench: unknown option \(argument)\n\(usage)\n".utf8))
        exit(2)
    }
}
if scale != 1 {
    sizes.p1Requests = max(10, Int(Double(sizes.p1Requests) * scale))
    sizes.p2Streams = max(10, Int(Double(sizes.p2Streams) * scale))
    sizes.p3InFlight = max(10, Int(Double(sizes.p3InFlight) * scale))
    sizes.p4Bytes = max(1 << 20, Int(Double(sizes.p4Bytes) * scale))
    sizes.p5Backlog = max(10, Int(Double(sizes.p5Backlog) * scale))
    sizes.b1Lines = max(10, Int(Double(sizes.b1Lines) * scale))
    sizes.b2Lines = max(10, Int(Double(sizes.b2Lines) * scale))
    sizes.b3Lines = max(10, Int(Double(sizes.b3Lines) * scale))
    sizes.b4Lines = max(10, Int(Double(sizes.b4Lines) * scale))
    sizes.curveStreams = sizes.curveStreams.map { max(10, Int(Double($0) * scale)) }
    sizes.curveBacklog = sizes.curveBacklog.map { max(10, Int(Double($0) * scale)) }
}

// Thousands of streams need thousands of descriptors, here as in the daemon.
var limit = rlimit()
if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

let scenarios: [(String, (Sizes) throws -> [Figure])] = [("P1", Scenarios.p1), ("P2", Scenarios.p2), ("P3", Scenarios.p3), ("P4", Scenarios.p4), ("P5", Scenarios.p5),
                                                           ("P6", Scenarios.p6), ("B1", Scenarios.b1), ("B2", Scenarios.b2), ("B3", Scenarios.b3),
                                                           ("B4", Scenarios.b4)]
var figures: [Figure] = []
var failed = false
if let curvesFolder {
    selected = []
    do {
        figures = try Curves.run(folder: curvesFolder, streamSizes: sizes.curveStreams, backlogSizes: sizes.curveBacklog,
                                 hold: sizes.p2HoldSeconds, concurrency: sizes.concurrency)
    } catch {
        FileHandle.standardError.write(Data("llmspool-bench: curves failed: \(error)\n".utf8))
        failed = true
    }
}

func cell(_ value: Double?) -> String {
    guard let value else { return "-" }
    return value >= 100 ? String(format: "%.0f", value) : String(format: "%.2f", value)
}

func row(_ figure: Figure) -> String {
    let met = figure.met.map { $0 ? "yes" : "no" } ?? "-"
    return "| \(figure.scenario) | \(figure.metric) | \(cell(figure.llmspool)) | \(cell(figure.raw)) | \(cell(figure.urlSession)) | \(figure.target) | \(met) |"
}
for (name, run) in scenarios where selected.contains(name) {
    var samples: [[Figure]] = []
    for round in 1...runs {
        FileHandle.standardError.write(Data("\(name) run \(round)/\(runs)...\n".utf8))
        // Each run starts on a quiet disk: the last one's results are written back first.
        sync()
        do {
            samples.append(try run(sizes))
        } catch {
            FileHandle.standardError.write(Data("llmspool-bench: \(name) failed: \(error)\n".utf8))
            failed = true
        }
    }
    guard let first = samples.first else { continue }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    for (index, figure) in first.enumerated() {
        var merged = figure
        merged.llmspool = median(samples.map { $0[index].llmspool })
        let raws = samples.compactMap { $0[index].raw }
        let sessions = samples.compactMap { $0[index].urlSession }
        merged.raw = raws.isEmpty ? nil : median(raws)
        merged.urlSession = sessions.isEmpty ? nil : median(sessions)
        if figure.met != nil {
            let passes = samples.filter { $0[index].met == true }.count
            merged.met = passes * 2 > samples.count
        }
        figures.append(merged)
        // Each scenario's rows as soon as they are known, on stderr; the table at the end.
        FileHandle.standardError.write(Data((row(merged) + "\n").utf8))
    }
}

print("| scenario | metric | llmspool | raw libcurl | URLSession | target | met |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for figure in figures { print(row(figure)) }
if let jsonPath {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try? encoder.encode(["runs": runs]).write(to: URL(fileURLWithPath: jsonPath + ".meta"))
    if let data = try? encoder.encode(figures) { try? data.write(to: URL(fileURLWithPath: jsonPath)) }
}
exit(failed ? 1 : 0)
