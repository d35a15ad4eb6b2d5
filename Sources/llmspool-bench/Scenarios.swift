import Foundation
import Glibc
import LLMSpoolCore

/// One measured figure, with the reference clients beside it when they apply.
struct Figure: Codable {
    var scenario: String
    var metric: String
    var llmspool: Double
    var raw: Double?
    var urlSession: Double?
    var target: String
    var met: Bool?
}

/// Sizes of the five scenarios: the issue's figures, or small ones for the smoke run.
struct Sizes {
    var p1Requests = 20_000
    var p2Streams = 10_000
    var p2HoldSeconds = 20
    var p3Probes = 200
    var p3InFlight = 1_000
    var p4Bytes = 1 << 30
    var p5Backlog = 100_000
    var b1Lines = 100_000
    var b2Lines = 1_000_000
    var b3Lines = 20_000
    var b4Lines = 50_000
    var concurrency = 64
    var p6Streams = 5_000
    var p6HoldSeconds = 20
    /// nghttpx's own default for streams on one HTTP/2 connection.
    var p6MaxStreams = 100
    var curveStreams = [100, 1_000, 10_000]
    var curveBacklog = [1_000, 10_000, 100_000]

    static let smoke = Sizes(p1Requests: 200, p2Streams: 50, p2HoldSeconds: 2, p3Probes: 20, p3InFlight: 50, p4Bytes: 8 << 20, p5Backlog: 2_000,
                             b1Lines: 2_000, b2Lines: 5_000, b3Lines: 300, b4Lines: 300, p6Streams: 40, p6HoldSeconds: 2,
                             curveStreams: [10, 20], curveBacklog: [100, 200])
}

enum Scenarios {
    /// Requests that ended without an answer: in `failed/` for llmspool (which retries),
    /// not answered 200 for the reference clients (which send each request once).
    static func failures(_ scenario: String, _ fixture: Fixture, _ raw: ClientRun, _ session: ClientRun) -> Figure {
        let failed = ((try? Syscall.listDirectoryRaw(fixture.layout.failed)) ?? []).filter { $0.count > 11 && Array($0.suffix(11)) == Array(".error.json".utf8) }.count
        return Figure(scenario: scenario, metric: "requests without an answer", llmspool: Double(failed), raw: Double(raw.failed),
                      urlSession: Double(session.failed), target: "0", met: failed == 0)
    }

    static func request(_ prompt: String, stream: Bool = false, stub: [String: Any]? = nil) -> [String: Any] {
        var object: [String: Any] = ["model": "bench", "messages": [["role": "user", "content": prompt]]]
        if stream { object["stream"] = true }
        if let stub { object["stub"] = stub }
        return object
    }

    static func bodies(_ requests: [[String: Any]]) -> [[UInt8]] {
        requests.map { Array((try? JSONSerialization.data(withJSONObject: $0)) ?? Data()) }
    }

    /// P1: small requests dropped at once, answered at once, results durable.
    static func p1(_ sizes: Sizes) throws -> [Figure] {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        try fixture.startDaemon(concurrency: sizes.concurrency)
        let pid = fixture.daemon!.processIdentifier
        let ids = try fixture.stage(sizes.p1Requests, prefix: "p1-") { request("p1 \($0)") }
        let loadAtStart = DiskCeilingProbe.loadAverage()
        let cpu0 = ProcessStats.cpuSeconds(pid)
        let start = Date()
        try fixture.drop(ids)
        let end = try fixture.waitForResults(ids.count, timeout: 3600)
        let rate = Double(ids.count) / end.timeIntervalSince(start)
        let cpuPerRequest = (ProcessStats.cpuSeconds(pid) - cpu0) / Double(ids.count) * 1000
        // The disk's own ceiling, with the daemon stopped: as many files of a result's size,
        // beside the spool (the same filesystem), on as many threads as the finisher has.
        fixture.stopDaemon()
        let resultBytes = Int(try Syscall.lstat(fixture.layout.result(ids[0])).st_size)
        let probe = try DiskCeilingProbe.run(folder: fixture.root + "/probe", count: ids.count, bytes: resultBytes,
                                             threads: SpoolDaemon.finisherThreads, batchLimit: GroupCommitter.batchLimit)
        let probeRate = Double(ids.count) / probe.seconds
        let payload = bodies((0..<sizes.p1Requests).map { request("raw \($0)") })
        let rawRun = RawCurlClient.run(url: fixture.stubURL + "/chat/completions", bodies: payload, concurrency: sizes.concurrency)
        let sessionRun = URLSessionClient.run(url: fixture.stubURL + "/chat/completions", bodies: payload, concurrency: sizes.concurrency)
        let raw = Double(payload.count) / rawRun.seconds
        let session = Double(payload.count) / sessionRun.seconds
        return [
            Figure(scenario: "P1", metric: "completed/s", llmspool: rate, raw: raw, urlSession: session,
                   target: ">= 0.5x raw and >= 3x URLSession", met: rate >= 0.5 * raw && rate >= 3 * session),
            Figure(scenario: "P1", metric: "daemon CPU ms/request", llmspool: cpuPerRequest, raw: nil, urlSession: nil, target: "-", met: nil),
            failures("P1", fixture, rawRun, sessionRun),
            // raw: the probe's files/s; llmspool: P1's completed/s over it.
            Figure(scenario: "P1", metric: "completed/s / disk-ceiling probe (\(SpoolDaemon.finisherThreads) threads, \(resultBytes) B files)",
                   llmspool: rate / probeRate, raw: probeRate, urlSession: nil, target: ">= 0.8", met: rate >= 0.8 * probeRate),
            Figure(scenario: "P1", metric: "probe folder fsyncs", llmspool: Double(probe.folderSyncs), raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "P1", metric: "load average (1 min) at the start", llmspool: loadAtStart, raw: nil, urlSession: nil, target: "-", met: nil),
        ]
    }

    /// P2: many concurrent streams held by the stub while tokens trickle.
    static func p2(_ sizes: Sizes) throws -> [Figure] {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        try fixture.startDaemon(concurrency: sizes.p2Streams + 10)
        let pid = fixture.daemon!.processIdentifier
        let stub: [String: Any] = ["tokens": sizes.p2HoldSeconds, "token_delay_ms": 1000]
        let ids = try fixture.stage(sizes.p2Streams, prefix: "p2-") { request("p2 \($0)", stream: true, stub: stub) }
        let cpu0 = ProcessStats.cpuSeconds(pid)
        let start = Date()
        try fixture.drop(ids)
        let end = try fixture.waitForResults(ids.count, timeout: Double(sizes.p2HoldSeconds) * 20 + 120)
        let wall = end.timeIntervalSince(start)
        let cpuPerRequest = (ProcessStats.cpuSeconds(pid) - cpu0) / Double(ids.count) * 1000
        let rss = ProcessStats.peakRSSMiB(pid)
        fixture.stopDaemon()
        let payload = bodies((0..<sizes.p2Streams).map { request("raw \($0)", stream: true, stub: stub) })
        let rawRun = RawCurlClient.run(url: fixture.stubURL + "/chat/completions", bodies: payload, concurrency: sizes.p2Streams)
        let sessionRun = URLSessionClient.run(url: fixture.stubURL + "/chat/completions", bodies: payload, concurrency: sizes.p2Streams)
        let raw = rawRun.seconds
        let session = sessionRun.seconds
        let hold = Double(sizes.p2HoldSeconds)
        return [
            Figure(scenario: "P2", metric: "wall s (\(sizes.p2Streams) streams held \(sizes.p2HoldSeconds) s)", llmspool: wall, raw: raw, urlSession: session,
                   target: "<= 1.1x hold (\(String(format: "%.0f", hold * 1.1)) s)", met: wall <= 1.1 * hold),
            Figure(scenario: "P2", metric: "daemon peak RSS MiB", llmspool: rss, raw: nil, urlSession: nil, target: "<= 256", met: rss <= 256),
            Figure(scenario: "P2", metric: "daemon CPU ms/request", llmspool: cpuPerRequest, raw: nil, urlSession: nil, target: "<= 0.3", met: cpuPerRequest <= 0.3),
            failures("P2", fixture, rawRun, sessionRun),
        ]
    }

    /// P3: from the rename into outgoing to the request's arrival at the stub.
    static func p3(_ sizes: Sizes) throws -> [Figure] {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        try fixture.startDaemon(concurrency: sizes.p3InFlight + 100)
        func probe(_ label: String) throws -> [Double] {
            var dropped: [String: Double] = [:]
            for index in 0..<sizes.p3Probes {
                let ids = try fixture.stage(1, prefix: "\(label)-\(index)-") { _ in request("\(label) \(index)") }
                let at = Date().timeIntervalSince1970
                try fixture.drop(ids)
                dropped["\(label) \(index)"] = at
                usleep(10_000)
            }
            usleep(300_000)
            let arrivals = try fixture.arrivals()
            return dropped.compactMap { prompt, at in arrivals[prompt].map { ($0 - at) * 1000 } }.sorted()
        }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            values.isEmpty ? .nan : values[min(values.count - 1, Int(Double(values.count) * p))]
        }
        let idle = try probe("idle")
        // Then with long streams in flight.
        let busy = try fixture.stage(sizes.p3InFlight, prefix: "busy-") { request("busy \($0)", stream: true, stub: ["tokens": 60, "token_delay_ms": 1000]) }
        try fixture.drop(busy)
        // In flight means the stub holds every busy stream, not that the daemon has just
        // started them: a burst of connections is measured by P2, not here.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let held = (try? fixture.arrivals())?.keys.filter { $0.hasPrefix("busy ") }.count ?? 0
            if held >= sizes.p3InFlight { break }
            usleep(100_000)
        }
        usleep(500_000)
        let loaded = try probe("loaded")
        return [
            Figure(scenario: "P3", metric: "pickup p50 ms, idle", llmspool: percentile(idle, 0.5), raw: nil, urlSession: nil, target: "<= 0.5", met: percentile(idle, 0.5) <= 0.5),
            Figure(scenario: "P3", metric: "pickup p99 ms, idle", llmspool: percentile(idle, 0.99), raw: nil, urlSession: nil, target: "<= 2", met: percentile(idle, 0.99) <= 2),
            Figure(scenario: "P3", metric: "pickup p99 ms, \(sizes.p3InFlight) in flight", llmspool: percentile(loaded, 0.99), raw: nil, urlSession: nil,
                   target: "<= 10", met: percentile(loaded, 0.99) <= 10),
        ]
    }

    /// P4: one very large streamed answer.
    static func p4(_ sizes: Sizes) throws -> [Figure] {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        try fixture.startDaemon(concurrency: 4, extra: ["max_response_bytes": sizes.p4Bytes * 2])
        let pid = fixture.daemon!.processIdentifier
        let stub: [String: Any] = ["bulk_bytes": sizes.p4Bytes]
        let ids = try fixture.stage(1, prefix: "p4-") { _ in request("p4", stream: true, stub: stub) }
        let start = Date()
        try fixture.drop(ids)
        let end = try fixture.waitForResults(1, timeout: 3600)
        let size = Double((try? Syscall.lstat(fixture.layout.rawStream(ids[0])).st_size) ?? 0)
        let rate = size / end.timeIntervalSince(start) / 1e6
        let rss = ProcessStats.peakRSSMiB(pid)
        let payload = bodies([request("raw", stream: true, stub: stub)])
        let raw = size / RawCurlClient.run(url: fixture.stubURL + "/chat/completions", bodies: payload, concurrency: 1).seconds / 1e6
        let session = size / URLSessionClient.run(url: fixture.stubURL + "/chat/completions", bodies: payload, concurrency: 1).seconds / 1e6
        let mib = sizes.p4Bytes >> 20
        return [
            Figure(scenario: "P4", metric: "MB/s to disk (\(mib) MiB answer)", llmspool: rate, raw: raw, urlSession: session, target: ">= 500", met: rate >= 500),
            Figure(scenario: "P4", metric: "daemon peak RSS MiB", llmspool: rss, raw: nil, urlSession: nil, target: "<= 48", met: rss <= 48),
        ]
    }

    /// P5: a large backlog already waiting when the daemon starts.
    static func p5(_ sizes: Sizes) throws -> [Figure] {
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        let ids = try fixture.stage(sizes.p5Backlog, prefix: "p5-") { request("p5 \($0)") }
        try fixture.drop(ids)
        let start = Date()
        try fixture.startDaemon(concurrency: sizes.concurrency)
        let pid = fixture.daemon!.processIdentifier
        let end = try fixture.waitForResults(ids.count, timeout: 7200)
        let first = try fixture.arrivals().values.min() ?? .nan
        let firstUpload = first - start.timeIntervalSince1970
        let rate = Double(ids.count) / end.timeIntervalSince(start)
        let rss = ProcessStats.peakRSSMiB(pid)
        return [
            Figure(scenario: "P5", metric: "first upload s after start (\(sizes.p5Backlog) waiting)", llmspool: firstUpload, raw: nil, urlSession: nil,
                   target: "<= 1", met: firstUpload <= 1),
            Figure(scenario: "P5", metric: "completed/s", llmspool: rate, raw: nil, urlSession: nil, target: "as P1", met: nil),
            Figure(scenario: "P5", metric: "daemon peak RSS MiB", llmspool: rss, raw: nil, urlSession: nil, target: "<= 256", met: rss <= 256),
        ]
    }
}
