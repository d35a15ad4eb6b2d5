import Foundation
import Glibc
import LLMSpoolCore

extension Scenarios {
    /// B4: a 50,000-request group through the background lane. One batch file of that
    /// many lines, every one deferrable (the config's `default_completion_window` is
    /// "24h"), goes to a daemon with one OpenAI batch endpoint on the stub, whose batches
    /// end 3 s after their create: one group (the lane's 50,000-request limit), uploaded,
    /// created, polled, downloaded and split into the batch's output lines (a smaller run,
    /// `--smoke` or `--scale`, makes its group full at its own size). The daemon's VmHWM
    /// once the batch's summary appears is its peak from grouping to split.
    static func b4(_ sizes: Sizes) throws -> [Figure] {
        let lines = sizes.b4Lines
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub(["--batch-seconds", "3"])
        try fixture.startDaemon(concurrency: 64, extra: [
            "endpoints": [["name": "batchy", "base_url": fixture.stubURL, "batch": true]],
            "default_completion_window": "24h", "max_batch_lines": max(lines, 1),
            // One group, sent when it is full (at most OpenAI's 50,000), not when it lingers out.
            "batch_max_requests": min(max(lines, 1), 50_000), "batch_linger_seconds": 600,
            "batch_poll_seconds": 1, "batch_poll_max_seconds": 2,
        ])
        let pid = fixture.daemon!.processIdentifier
        let staged = try stageBatch(fixture, name: "b4", count: lines, promptBytes: 200)
        let cpu0 = ProcessStats.cpuSeconds(pid)
        let start = Date()
        try Syscall.rename(staged, fixture.layout.batchRequest("b4"))
        let deadline = Date().addingTimeInterval(3600)
        while !Syscall.isPresent(fixture.layout.batchSummary("b4")) {
            guard Date() < deadline else { throw ConfigError("the batch b4 did not end in time") }
            usleep(50_000)
        }
        let seconds = Date().timeIntervalSince(start)
        let rss = ProcessStats.peakRSSMiB(pid)
        let cpu = ProcessStats.cpuSeconds(pid) - cpu0
        // Every line must have come back from the remote batch, not from the live lane.
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: fixture.layout.batchSummary("b4")))) as? [String: Any]
        let completed = (summary?["request_counts"] as? [String: Any])?["completed"] as? Int ?? 0
        let live = try fixture.arrivals().count
        let batches = try JSONSerialization.jsonObject(with: httpGet(port: fixture.stubPort, path: "/stub/batches")) as? [String: Any]
        let creations = (batches?["creations"] as? [String: Int] ?? [:]).values.reduce(0, +)
        guard completed == lines, live == 0 else {
            throw ConfigError("B4: \(completed) of \(lines) lines completed, \(live) went live")
        }
        return [
            Figure(scenario: "B4", metric: "daemon peak RSS MiB (\(lines) deferred lines, one group)", llmspool: rss, raw: nil, urlSession: nil,
                   target: "< 128", met: rss < 128),
            Figure(scenario: "B4", metric: "remote batches created", llmspool: Double(creations), raw: nil, urlSession: nil,
                   target: "\(max(1, (lines + 49_999) / 50_000))", met: creations == max(1, (lines + 49_999) / 50_000)),
            Figure(scenario: "B4", metric: "seconds from drop to summary", llmspool: seconds, raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "B4", metric: "daemon CPU ms/line", llmspool: cpu / Double(max(lines, 1)) * 1000, raw: nil, urlSession: nil,
                   target: "-", met: nil),
        ]
    }
}
