import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// Hooks queued behind a slow one when the daemon is killed run at its next start: each
/// outcome's hook runs at least once across kill -9 (`HookRecovery`).
@Suite(.serialized) struct OwedHookTests {
    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// The config of hooks run one at a time, each appending `line` (shell words) to `log`;
    /// a hook for which `held` (a shell test) is true first waits for `gate`, which the
    /// test makes after the kill: whatever the machine's speed, that hook holds the one
    /// hook thread and the others queue behind it until then.
    func gatedHooks(_ harness: Harness, held: String, line: String) -> (config: [String: Any], log: String, gate: String) {
        let log = harness.root + "/hooks.log"
        let gate = harness.root + "/gate"
        let hook = "if \(held); then while [ ! -e \(gate) ]; do sleep 0.05; done; fi; echo \"\(line)\" >> \(log)"
        return (["on_complete": hook, "on_failure": hook, "hook_concurrency": 1], log, gate)
    }

    @Test func hooksQueuedAtAKillRunAfterTheRestart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // Every hook waits for the gate: every outcome is published, and every hook but the
        // first still queued, at the kill.
        let (config, log, gate) = gatedHooks(harness, held: "true", line: "$LLMSPOOL_STATUS $LLMSPOOL_ID")
        try harness.startDaemon(config: config)
        let good = (1...5).map { "good\($0)" }
        let bad = ["bad1", "bad2"]
        for id in good { try harness.drop(id, Harness.request("hooked \(id)")) }
        for id in bad { try harness.drop(id, Harness.request("refused \(id)", stub: ["status": 400])) }
        try waitUntil("every outcome is published", timeout: 20) {
            good.allSatisfy { exists(harness.layout.result($0)) } && bad.allSatisfy { exists(harness.layout.errorRecord($0)) }
                && !good.contains { exists(harness.layout.request($0)) } && !bad.contains { exists(harness.layout.request($0)) }
        }
        harness.killDaemon()
        func lines() -> [String] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        #expect(lines().isEmpty, "no hook had run at the kill")
        // The hook running at the kill is not the daemon's to stop (its own process group): it ends once the gate opens.
        try DurableFile.write([], to: gate)
        try waitUntil("the hook running at the kill ends", timeout: 10) { lines().count == 1 }
        let ranBefore = Set(lines())
        let owed = try Syscall.listDirectory(harness.layout.pendingHooks)
        #expect(!owed.isEmpty, "the owed hooks are noted")

        try harness.startDaemon(config: config)
        let expected = Set(good.map { "done \($0)" } + bad.map { "failed \($0)" })
        try waitUntil("every hook has run", timeout: 30) { Set(lines()) == expected }
        try waitUntil("no hook is owed any more", timeout: 10) { (try? Syscall.listDirectory(harness.layout.pendingHooks))?.isEmpty == true }
        #expect(harness.stopDaemon() == 0)
        // At least once: only a hook that had run (or was running) at the kill may run again.
        let counts = Dictionary(lines().map { ($0, 1) }, uniquingKeysWith: +)
        for (line, count) in counts where count > 1 {
            #expect(ranBefore.contains(line) && count == 2, "\(line) ran \(count) times")
        }
        #expect(harness.log.contains("running a hook owed from before the restart"))
    }

    /// A batch's hook, queued behind a request's slow one at the kill, runs after the
    /// restart with the counts of the batch's summary; a refused batch's likewise.
    @Test func aBatchsHookQueuedAtAKillRunsAfterTheRestart() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        // The request's hook holds the one hook thread until the test opens the gate, after the kill.
        let (config, log, gate) = gatedHooks(harness, held: "[ \"$LLMSPOOL_ID\" = slow ]",
                                             line: "${LLMSPOOL_BATCH:-0} $LLMSPOOL_ID $LLMSPOOL_STATUS ${LLMSPOOL_BATCH_TOTAL:-} ${LLMSPOOL_BATCH_SUCCEEDED:-} ${LLMSPOOL_BATCH_FAILED:-}")
        try harness.startDaemon(config: config)
        try harness.drop("slow", Harness.request("holds the hook thread"))
        try waitUntil("the slow hook runs", timeout: 20) { harness.log.contains("done id=slow") }
        try BatchTests.dropBatch(harness, "mixed", (0..<6).map { BatchTests.line("m-\($0)", stub: $0 == 2 ? ["status": 400] : nil) })
        try BatchTests.dropBatch(harness, "refused", [BatchTests.line("x"), "not json"])
        try waitUntil("both batches ended", timeout: 20) {
            exists(harness.layout.batchSummary("mixed")) && !exists(harness.layout.batchRequest("mixed"))
                && exists(harness.layout.batchErrorRecord("refused")) && !exists(harness.layout.batchRequest("refused"))
        }
        harness.killDaemon()
        #expect(exists(harness.layout.pendingBatchHook("mixed")) && exists(harness.layout.pendingBatchHook("refused")), "both hooks are owed")
        // The slow hook, running at the kill, ends once the gate opens (its own process group).
        func lines() -> Set<String> { Set(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)) }
        #expect(lines().isEmpty, "no hook had run at the kill")
        try DurableFile.write([], to: gate)
        try waitUntil("the slow hook ends", timeout: 10) { lines().contains("0 slow done   ") }
        #expect(!lines().contains { $0.contains("mixed") || $0.contains("refused") }, "the batches' hooks had not run")

        try harness.startDaemon(config: config)
        try waitUntil("the batches' hooks run", timeout: 30) {
            lines().isSuperset(of: ["1 mixed failed 6 5 1", "1 refused failed 0 0 0"])
        }
        try waitUntil("no hook is owed any more", timeout: 15) { (try? Syscall.listDirectory(harness.layout.pendingHooks))?.isEmpty == true }
        #expect(harness.stopDaemon() == 0)
    }

    /// A request cancelled after its hook was noted owes nothing: the note goes.
    @Test func aNoteWithNothingPublishedIsDropped() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        let log = harness.root + "/hooks.log"
        // A note left as a daemon killed before the commit point leaves it, for a request since withdrawn.
        try harness.layout.create()
        let note = harness.layout.pendingHook("withdrawn", request: nil)
        try DurableFile.write([], to: note)
        try harness.startDaemon(config: ["on_complete": "echo \"$LLMSPOOL_ID\" >> \(log)"])
        try waitUntil("the note is dropped", timeout: 10) { !exists(note) }
        #expect(!exists(log), "no hook ran for nothing published")
    }
}
