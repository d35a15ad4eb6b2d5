import Foundation
import Glibc
import LLMSpoolCore
import LLMSpoolStub

extension Scenarios {
    /// One daemon run of P6: what it took and how many connections it used.
    struct TLSRun {
        var wall: Double
        var cpuPerRequest: Double
        var rss: Double
        var connections: Int
        var overHTTP2: Int
    }

    /// P6: long streams over HTTPS with HTTP/2, as real providers serve them: nghttpx with
    /// a private CA in front of the stub; the daemon over HTTP/2 and over HTTP/1.1, then the
    /// raw libcurl client over HTTP/2, one after another in the same run. URLSession is not
    /// run: FoundationNetworking on Linux has no way to trust a private CA short of the
    /// system's store (no CA setting, no server-trust challenge), which the run leaves alone.
    static func p6(_ sizes: Sizes) throws -> [Figure] {
        if let missing = TLSFront.missing { throw ConfigError("P6 needs an HTTP/2 TLS proxy: \(missing)") }
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        try Syscall.mkdir(fixture.root + "/tls", mode: 0o700)
        let front = try TLSFront(backendPort: fixture.stubPort, directory: fixture.root + "/tls", maxStreams: sizes.p6MaxStreams)
        defer { front.stop() }
        let streams = sizes.p6Streams
        let stub: [String: Any] = ["tokens": sizes.p6HoldSeconds, "token_delay_ms": 1000]
        var finished = 0

        /// The log lines of requests that ended since `before` entries, once all `count` are in.
        func logged(after before: Int, count: Int) -> [TLSFront.Entry] {
            let deadline = Date().addingTimeInterval(30)
            var entries = Array(front.entries().dropFirst(before))
            while entries.count < count, Date() < deadline {
                usleep(100_000)
                entries = Array(front.entries().dropFirst(before))
            }
            return entries
        }

        func daemon(_ version: String, streams: Int) throws -> TLSRun {
            let before = front.entries().count
            try fixture.startDaemon(concurrency: streams + 10, extra: ["base_url": front.url, "ca_file": front.caFile, "http_version": version])
            let pid = fixture.daemon!.processIdentifier
            let ids = try fixture.stage(streams, prefix: "p6-\(version)-") { request("p6 \(version) \($0)", stream: true, stub: stub) }
            let cpu0 = ProcessStats.cpuSeconds(pid)
            let start = Date()
            try fixture.drop(ids)
            finished += ids.count
            let end = try fixture.waitForResults(finished, timeout: Double(sizes.p6HoldSeconds) * 20 + 120)
            let run = TLSRun(wall: end.timeIntervalSince(start), cpuPerRequest: (ProcessStats.cpuSeconds(pid) - cpu0) / Double(ids.count) * 1000,
                             rss: ProcessStats.peakRSSMiB(pid), connections: 0, overHTTP2: 0)
            fixture.stopDaemon()
            let entries = logged(after: before, count: ids.count)
            let measured = TLSRun(wall: run.wall, cpuPerRequest: run.cpuPerRequest, rss: run.rss, connections: TLSFront.connections(entries),
                                  overHTTP2: entries.filter { $0.alpn == "h2" }.count)
            // As measured: a run stopped in a later phase keeps this one's figures.
            FileHandle.standardError.write(Data("P6 daemon http_version \(version), \(streams) streams: \(measured)\n".utf8))
            return measured
        }

        let h2 = try daemon("auto", streams: streams)
        let payload = bodies((0..<streams).map { request("raw \($0)", stream: true, stub: stub) })
        let url = front.url + "/chat/completions"
        let before = front.entries().count
        let rawRun = RawCurlClient.run(url: url, bodies: payload, concurrency: streams, tls: .init(caFile: front.caFile, http2: true))
        if let error = rawRun.error { throw ConfigError("the raw libcurl client failed: \(error)") }
        let rawEntries = logged(after: before, count: streams)
        FileHandle.standardError.write(Data("P6 raw h2: \(rawRun), \(TLSFront.connections(rawEntries)) connections\n".utf8))
        // Over HTTP/1.1 each stream is a TLS connection of its own; at 5,000 the proxy's one
        // worker accepted them so slowly (about 2 a second on the shared machine) that the
        // phase would have taken half an hour, so it runs a tenth of the streams.
        let h1Streams = max(10, streams / 10)
        let h1 = try daemon("1.1", streams: h1Streams)
        let ceiling = (streams + sizes.p6MaxStreams - 1) / sizes.p6MaxStreams + 4
        let label = "\(streams) streams of \(sizes.p6HoldSeconds) s"
        return [
            Figure(scenario: "P6", metric: "wall s, HTTP/2 over TLS (\(label))", llmspool: h2.wall, raw: rawRun.seconds, urlSession: nil,
                   target: "<= 1.10x raw h2", met: h2.wall <= 1.10 * rawRun.seconds),
            Figure(scenario: "P6", metric: "wall s, HTTP/1.1 over TLS (\(h1Streams) streams)", llmspool: h1.wall, raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "P6", metric: "TCP connections, HTTP/2 (\(sizes.p6MaxStreams) streams each)", llmspool: Double(h2.connections),
                   raw: Double(TLSFront.connections(rawEntries)), urlSession: nil, target: "<= \(ceiling)", met: h2.connections <= ceiling),
            Figure(scenario: "P6", metric: "TCP connections, HTTP/1.1", llmspool: Double(h1.connections), raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "P6", metric: "requests over h2 (auto)", llmspool: Double(h2.overHTTP2), raw: Double(rawEntries.filter { $0.alpn == "h2" }.count), urlSession: nil,
                   target: "\(streams)", met: h2.overHTTP2 == streams),
            Figure(scenario: "P6", metric: "daemon CPU ms/request, HTTP/2", llmspool: h2.cpuPerRequest, raw: nil, urlSession: nil,
                   target: "<= 1", met: h2.cpuPerRequest <= 1),
            Figure(scenario: "P6", metric: "daemon CPU ms/request, HTTP/1.1", llmspool: h1.cpuPerRequest, raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "P6", metric: "daemon peak RSS MiB, HTTP/2", llmspool: h2.rss, raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "P6", metric: "daemon peak RSS MiB, HTTP/1.1", llmspool: h1.rss, raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "P6", metric: "requests without an answer", llmspool: Double(Curves.failedCount(fixture)), raw: Double(rawRun.failed),
                   urlSession: nil, target: "0", met: Curves.failedCount(fixture) == 0),
        ]
    }
}
