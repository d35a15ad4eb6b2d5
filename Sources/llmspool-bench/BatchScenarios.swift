import Foundation
import Glibc
import LLMSpoolCore

extension Scenarios {
    /// A batch file of `count` chat lines, written to the fixture's staging folder; each
    /// prompt padded to about `promptBytes`.
    static func stageBatch(_ fixture: Fixture, name: String, count: Int, promptBytes: Int = 0) throws -> String {
        let path = "\(fixture.root)/staging/\(name).jsonl"
        let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC)
        let padding = String(repeating: "x", count: promptBytes)
        var chunk: [UInt8] = []
        for index in 0..<count {
            let line = #"{"custom_id":"\#(name)-\#(index)","method":"POST","url":"/v1/chat/completions","body":{"model":"bench","messages":[{"role":"user","content":"\#(name) \#(index) \#(padding)"}]}}"#
            chunk += Array(line.utf8)
            chunk.append(0x0A)
            if chunk.count >= 1 << 20 {
                try file.writeAll(chunk)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try file.writeAll(chunk)
        try file.fsync()
        return path
    }

    /// Runs one batch file through a fresh daemon; returns lines per second, CPU ms per
    /// line and the daemon's peak RSS.
    /// `given`: a fixture whose stub is running, shared with a reference client; it is left running.
    static func runBatch(name: String, lines: Int, promptBytes: Int, concurrency: Int, in given: Fixture? = nil) throws
        -> (rate: Double, cpu: Double, rss: Double, anonymous: Double) {
        let fixture = try given ?? Fixture()
        defer { if given == nil { fixture.stop() } }
        if given == nil { try fixture.startStub() }
        try fixture.startDaemon(concurrency: concurrency, extra: ["max_batch_lines": max(lines, 1)])
        let pid = fixture.daemon!.processIdentifier
        let staged = try stageBatch(fixture, name: name, count: lines, promptBytes: promptBytes)
        let cpu0 = ProcessStats.cpuSeconds(pid)
        let start = Date()
        try Syscall.rename(staged, fixture.layout.batchRequest(name))
        let deadline = Date().addingTimeInterval(7200)
        // The kernel keeps no peak of the anonymous part: sampled as the batch runs.
        var anonymous = ProcessStats.anonymousMiB(pid)
        while !Syscall.isPresent(fixture.layout.batchSummary(name)) {
            guard Date() < deadline else { throw ConfigError("the batch \(name) did not end in time") }
            usleep(20_000)
            anonymous = max(anonymous, ProcessStats.anonymousMiB(pid))
        }
        let seconds = Date().timeIntervalSince(start)
        return (Double(lines) / seconds, (ProcessStats.cpuSeconds(pid) - cpu0) / Double(lines) * 1000, ProcessStats.peakRSSMiB(pid), anonymous)
    }

    /// B1: a batch of requests against the same requests as single files, both at
    /// concurrency 256: a line costs a journal append, a request two fsyncs and renames.
    static func b1(_ sizes: Sizes) throws -> [Figure] {
        let batch = try runBatch(name: "b1", lines: sizes.b1Lines, promptBytes: 0, concurrency: 256)
        let fixture = try Fixture()
        defer { fixture.stop() }
        try fixture.startStub()
        try fixture.startDaemon(concurrency: 256)
        let ids = try fixture.stage(sizes.b1Lines, prefix: "b1-") { request("b1 \($0)") }
        let start = Date()
        try fixture.drop(ids)
        let end = try fixture.waitForResults(ids.count, timeout: 7200)
        let single = Double(ids.count) / end.timeIntervalSince(start)
        return [
            Figure(scenario: "B1", metric: "lines/s (\(sizes.b1Lines)-line batch)", llmspool: batch.rate, raw: nil, urlSession: nil,
                   target: ">= 2x single files", met: batch.rate >= 2 * single),
            Figure(scenario: "B1", metric: "completed/s (the same as single files)", llmspool: single, raw: nil, urlSession: nil, target: "-", met: nil),
            Figure(scenario: "B1", metric: "daemon CPU ms/line", llmspool: batch.cpu, raw: nil, urlSession: nil, target: "-", met: nil),
        ]
    }

    /// B2: a million-line batch of about 1 KiB a line: the daemon's memory stays bounded.
    static func b2(_ sizes: Sizes) throws -> [Figure] {
        let batch = try runBatch(name: "b2", lines: sizes.b2Lines, promptBytes: 900, concurrency: 256)
        return [
            Figure(scenario: "B2", metric: "daemon peak RSS MiB (\(sizes.b2Lines) lines)", llmspool: batch.rss, raw: nil, urlSession: nil,
                   target: "<= 128", met: batch.rss <= 128),
            Figure(scenario: "B2", metric: "lines/s", llmspool: batch.rate, raw: nil, urlSession: nil, target: "-", met: nil),
        ]
    }
}
