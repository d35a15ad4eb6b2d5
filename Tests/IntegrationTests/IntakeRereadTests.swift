import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Intake reads a held request's file again only when it changed: close-write events for
/// the same bytes are not read, parsed and dropped each time. The real daemon, the stub
/// and real files; the reads are counted by the daemon's own metric.
@Suite(.serialized) struct IntakeRereadTests {
    @Test func closeWritesOfAnUnchangedHeldRequestAreNotReadAgain() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["watch_mode": "inotify"], arguments: ["--metrics", "127.0.0.1:0"])
        let port = try harness.metricsPort()
        func reads() throws -> Int {
            let text = String(decoding: try LoopbackGet.body(port: port, path: "/metrics"), as: UTF8.self)
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("llmspool_watcher_reads_total ") }),
                  let value = Int(line.split(separator: " ")[1]) else { throw HarnessError("no llmspool_watcher_reads_total in the metrics") }
            return value
        }

        try harness.drop("held", Harness.request("held a while", stub: ["latency_ms": 4000]))
        try waitUntil("the request reaches the endpoint", timeout: 20) {
            try harness.stubArrivals().contains { $0.prompt == "held a while" }
        }
        let before = try reads()
        // Opened for writing and closed, twenty times, without a byte written: twenty
        // close-write events for a file whose bytes did not change.
        for _ in 0..<20 {
            let file = try FileDescriptor.open(harness.layout.request("held"), O_WRONLY)
            try file.close()
        }
        // Then a real change: a new file renamed over it, which must be read (it is a new
        // task). A rename, not an edit in place: a close-write still queued when the new
        // file takes the name sees it whole (and reads it, once), where an edit in place
        // could be caught half-written.
        try harness.drop("held", Harness.request("replaced by rename"))
        // The watcher handles its events in order: once the edit has been read and sent,
        // every close-write before it has been handled.
        try waitUntil("the edited request is answered", timeout: 30) {
            try harness.stubArrivals().contains { $0.prompt == "replaced by rename" }
                && Harness.content(of: (try? harness.json(harness.layout.result("held"))) ?? [:]) == StubAnswer.content(prompt: "replaced by rename", tokens: 8)
        }
        let after = try reads()
        #expect(after == before + 1, "only the edit was read; the twenty unchanged close-writes were not (\(before) before, \(after) after)")
    }
}
