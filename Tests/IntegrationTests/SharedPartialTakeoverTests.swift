import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// A request on a spool two daemons share with lease files, when the daemon sending it is
/// paused past its lease and wakes while the daemon that took it over is receiving the
/// answer: the woken one touches nothing of the new owner's.
@Suite(.serialized) struct SharedPartialTakeoverTests {
    /// The woken daemon's answer arrives (buffered in its socket) after the taker created
    /// its `.partial`. It must not replace that file: before, it unlinked it and created
    /// its own under the name, so that the answer it then discarded could be the one
    /// published (on sshfs, whose inode numbers follow the path, the taker never noticed).
    @Test func aWokenDaemonLeavesTheTakersPartialAlone() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let environment = [SpoolDaemon.leaseFilesVariable: "lease-files"]
        let first = try harness.startExtraDaemon("d1", config: SharedBatchTakeoverTests.config("d1", harness), environment: environment)
        defer {
            kill(first.processIdentifier, SIGCONT)
            kill(first.processIdentifier, SIGTERM)
        }
        try harness.drop("woken", Harness.request("paused mid-answer", stream: true, stub: ["latency_ms": 1500, "tokens": 50, "token_delay_ms": 200]))
        try waitUntil("d1 sends the request", timeout: 20) { harness.extraLog("d1").contains("upload started id=woken") }
        kill(first.processIdentifier, SIGSTOP)
        _ = try harness.startExtraDaemon("d2", config: SharedBatchTakeoverTests.config("d2", harness), environment: environment)
        try waitUntil("d2 takes the request over and receives its answer", timeout: 30) {
            harness.extraLog("d2").contains("upload started id=woken") && Syscall.isPresent(harness.layout.partial("woken"))
        }
        let taker = try Syscall.lstat(harness.layout.partial("woken")).st_ino
        kill(first.processIdentifier, SIGCONT)
        try waitUntil("d1 gives its attempt up", timeout: 20) {
            harness.extraLog("d1").split(separator: "\n").contains { $0.contains("id=woken") && ($0.contains("discarded") || $0.contains("another daemon")) }
        }
        // The taker's stream runs 10 s from its first byte: its `.partial` is still there.
        #expect(try Syscall.lstat(harness.layout.partial("woken")).st_ino == taker, "the taker's .partial was replaced by the woken daemon")
        try waitUntil("the answer is published", timeout: 30) {
            Syscall.isPresent(harness.layout.result("woken")) && !Syscall.isPresent(harness.layout.request("woken"))
        }
        try waitUntil("no .partial is left", timeout: 10) { !Syscall.isPresent(harness.layout.partial("woken")) }
        #expect(Harness.content(of: try harness.json(harness.layout.result("woken")))?.hasPrefix("Echo: paused mid-answer") == true)
    }
}
