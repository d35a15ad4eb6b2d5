import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// A drop folder others can write to: whatever lands in it, the daemon keeps running,
/// reads nothing it should not, sends nothing it should not, and says what it refused.
@Suite(.serialized) struct HostileInputTests {
    func exists(_ path: String) -> Bool { (try? Syscall.lstat(path)) != nil }

    @Test func thirtyKindsOfHostileFileHurtNothing() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_request_bytes": 1 << 20, "settle_seconds": 0.2])
        let out = harness.layout.outgoing
        let secret = harness.root + "/outside-secret.txt"
        let secretText = "TOP-SECRET-OUTSIDE-THE-SPOOL"
        try secretText.write(toFile: secret, atomically: false, encoding: .utf8)
        func write(_ name: String, _ bytes: [UInt8]) throws {
            try DurableFile.write(bytes, to: "\(out)/\(name)", syncDirectory: false)
        }
        func text(_ name: String, _ string: String) throws { try write(name, Array(string.utf8)) }
        let valid = #"{"model":"m","messages":[{"role":"user","content":"renamed but answered"}]}"#

        // Regular files that must be refused, each with a record: (name, kind expected).
        var refused: [(String, String)] = []
        func refuse(_ id: String, _ kind: String, _ make: () throws -> Void) throws {
            try make()
            refused.append((id, kind))
        }
        try refuse("empty", "invalid-json") { try text("empty.json", "") }
        try refuse("binary", "not-utf8") { try write("binary.json", (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7919) }) }
        try refuse("utf16", "not-utf8") { try write("utf16.json", [0xFF, 0xFE] + Array(valid.utf8).flatMap { [$0, 0] }) }
        try refuse("deep", "too-deep") { try text("deep.json", String(repeating: "[", count: 100_000)) }
        try refuse("huge", "too-large") { try write("huge.json", [UInt8](repeating: 0x20, count: 2 << 20)) }
        try refuse("array", "not-an-object") { try text("array.json", "[1, 2, 3]") }
        try refuse("string", "not-an-object") { try text("string.json", #""just a string""#) }
        try refuse("number", "not-an-object") { try text("number.json", "42") }
        try refuse("null", "not-an-object") { try text("null.json", "null") }
        try refuse("no-model", "missing-field") { try text("no-model.json", #"{"messages":[]}"#) }
        try refuse("model-number", "wrong-type") { try text("model-number.json", #"{"model":5,"messages":[]}"#) }
        try refuse("no-messages", "missing-field") { try text("no-messages.json", #"{"model":"m"}"#) }
        try refuse("messages-object", "wrong-type") { try text("messages-object.json", #"{"model":"m","messages":{}}"#) }
        try refuse("stream-string", "wrong-type") { try text("stream-string.json", #"{"model":"m","messages":[],"stream":"yes"}"#) }
        try refuse("truncated", "invalid-json") { try text("truncated.json", #"{"model":"m","messages":["#) }
        try refuse("trailing", "invalid-json") { try text("trailing.json", #"{"model":"m","messages":[]} trailing"#) }
        try refuse("nul", "invalid-json") { try write("nul.json", Array(#"{"model":"m""#.utf8) + [0] + Array(#","messages":[]}"#.utf8)) }
        try refuse("bad-utf8-inside", "not-utf8") { try write("bad-utf8-inside.json", Array(#"{"model":"m"#.utf8) + [0xC3, 0x28] + Array(#"","messages":[]}"#.utf8)) }
        try refuse("surrogate", "invalid-json") { try text("surrogate.json", #"{"model":"\ud800","messages":[]}"#) }
        try refuse("duplicate-brackets", "invalid-json") { try text("duplicate-brackets.json", "{{}}") }

        // Not regular files: never read, moved aside with a record.
        try refuse("symlink-secret", "not-a-regular-file") { try FileManager.default.createSymbolicLink(atPath: "\(out)/symlink-secret.json", withDestinationPath: secret) }
        try refuse("symlink-zero", "not-a-regular-file") { try FileManager.default.createSymbolicLink(atPath: "\(out)/symlink-zero.json", withDestinationPath: "/dev/zero") }
        try refuse("hardlink-secret", "hard-link") { guard link(secret, "\(out)/hardlink-secret.json") == 0 else { throw HarnessError("link: \(errno)") } }
        try refuse("fifo", "not-a-regular-file") { guard mkfifo("\(out)/fifo.json", 0o600) == 0 else { throw HarnessError("mkfifo: \(errno)") } }
        try refuse("socket", "not-a-regular-file") { try makeSocket("\(out)/socket.json") }
        try refuse("folder", "not-a-regular-file") {
            // Filled outside the spool, then renamed in whole: the daemon moves a folder
            // aside as soon as it appears.
            let staged = harness.root + "/folder-staging"
            try Syscall.mkdir(staged, mode: 0o700)
            try DurableFile.write(Array(valid.utf8), to: staged + "/inside.json")
            try Syscall.rename(staged, "\(out)/folder.json")
        }
        if Harness.isRoot {
            try refuse("device", "not-a-regular-file") { guard mknod("\(out)/device.json", S_IFCHR | 0o600, dev_t(0x103) /* 1:3, /dev/null */) == 0 else { throw HarnessError("mknod: \(errno)") } }
        }
        // A plain subfolder is never entered.
        try Syscall.mkdir("\(out)/sub", mode: 0o700)
        try text("sub/inner.json", valid)

        // Unsafe names: renamed to a safe id, answered, the original name kept escaped.
        let unsafeNames: [[UInt8]] = [
            Array("new\nline.json".utf8), Array("esc\u{1B}[31mape.json".utf8), Array("-rf.json".utf8),
            Array(String(repeating: "x", count: 240).utf8) + Array(".json".utf8), [0x62, 0x61, 0x64, 0xFF, 0xFE] + Array(".json".utf8),
        ]
        for raw in unsafeNames {
            let path = Array(out.utf8) + [0x2F] + raw + [0]
            let fd = path.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { Glibc.open($0.baseAddress!, O_WRONLY | O_CREAT | O_TRUNC, 0o600) } }
            guard fd >= 0 else { throw HarnessError("cannot create an unsafe name: errno \(errno)") }
            try Syscall.writeAll(fd, Array(valid.utf8))
            Syscall.close(fd)
        }
        let kinds = refused.count + unsafeNames.count + 1
        #expect(kinds >= 30, "\(kinds) kinds of hostile file")

        // Then a valid request: it must be answered.
        try harness.drop("valid", Harness.request("still working"))
        try waitUntil("the valid request is answered", timeout: 30) { exists(harness.layout.result("valid")) }
        do {
            try waitUntil("every hostile regular file has a record", timeout: 30) {
                refused.allSatisfy { exists(harness.layout.errorRecord($0.0)) }
            }
        } catch {
            Issue.record("no record for: \(refused.map(\.0).filter { !exists(harness.layout.errorRecord($0)) }); outgoing: \(harness.files(in: out))")
            throw error
        }
        try waitUntil("every unsafe name was answered under its safe id", timeout: 30) {
            unsafeNames.allSatisfy { exists(harness.layout.result(RequestName.safeID(forRawName: $0))) }
        }
        #expect(harness.daemonIsRunning, "the daemon is still up")
        for (id, kind) in refused {
            let record = try harness.json(harness.layout.errorRecord(id))
            #expect((record["problem"] as? [String: Any])?["kind"] as? String == kind, "\(id)")
            #expect((record["message"] as? String)?.contains("\(id).json") == true, "\(id): the record names the file")
            #expect(exists(harness.layout.failedRequest(id)), "\(id) was moved aside")
        }
        // The link is moved, never followed: its target is untouched and was never sent.
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == secretText)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: harness.layout.failedRequest("symlink-secret")) == secret)
        let sent = try harness.stubArrivals().map(\.prompt)
        #expect(Set(sent) == ["still working", "renamed but answered"], "nothing else reached the endpoint")
        #expect(sent.count == 1 + unsafeNames.count)
        #expect(exists("\(harness.layout.outgoing)/sub/inner.json"), "subfolders are never entered")
        let renamed = RequestName.safeID(forRawName: Array("new\nline.json".utf8))
        #expect(harness.layout.loadOriginalName(renamed) == #"new\x0aline.json"#)
        #expect(harness.layout.loadOriginalName(RequestName.safeID(forRawName: unsafeNames[4])) == #"bad\xff\xfe.json"#)
        #expect(!harness.log.contains("\n\u{1B}"), "no control character reached the log")
        #expect(!harness.log.contains("new\nline"))
        #expect(harness.filesContainingSecret().isEmpty)
        // Results, records and folders are the owner's alone.
        for path in [harness.layout.result("valid"), harness.layout.errorRecord("empty"), harness.layout.taskRecord("valid")] {
            #expect(try Syscall.lstat(path).st_mode & 0o077 == 0, "\(path)")
        }
    }

    @Test func anAnswerPastTheResponseLimitFailsWithoutRetry() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["max_response_bytes": 4096])
        try harness.drop("big", Harness.request("too much", stream: true, stub: ["tokens": 500]))
        try waitUntil("it failed", timeout: 20) { exists(harness.layout.errorRecord("big")) }
        let record = try harness.json(harness.layout.errorRecord("big"))
        #expect(record["kind"] as? String == "response-too-large")
        #expect(record["attempts"] as? Int == 1)
        #expect(!exists(harness.layout.partial("big")))
    }

    @Test func aConfigOthersCanWriteIsRefusedWithTheFix() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.writeConfig([:])
        _ = chmod(harness.configPath, 0o666)
        let finished = try harness.cli(["run", "--config", harness.configPath])
        #expect(finished.status == 1)
        #expect(finished.stderr.contains("writable by other users"))
        #expect(finished.stderr.contains("chmod go-w \(harness.configPath)"))
    }

    @Test func aWorldWritableDropFolderWithoutStickyBitIsWarnedAbout() throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        _ = chmod(harness.layout.outgoing, 0o777)
        try harness.startDaemon()
        #expect(harness.log.contains("outgoing is writable by every user without the sticky bit"))
    }

    func makeSocket(_ path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind: \(errno)") }
    }
}
