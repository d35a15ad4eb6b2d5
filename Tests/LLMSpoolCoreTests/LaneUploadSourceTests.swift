import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// The upload's body as libcurl reads it: the multipart head, each member's line made from
/// its file in place (compacted), the tail; exactly the size announced; a changed file fails.
@Suite struct LaneUploadSourceTests {
    func folder() throws -> String {
        let path = NSTemporaryDirectory() + "llmspool-upload-\(UUID().uuidString)"
        try Syscall.mkdir(path, mode: 0o700)
        return path
    }

    func write(_ text: String, _ path: String) throws -> FileIdentity {
        try DurableFile.write(Array(text.utf8), to: path, syncDirectory: false)
        return FileIdentity(try Syscall.lstat(path))
    }

    func drain(_ source: LaneUploadSource, chunk: Int) -> (bytes: [UInt8], failed: Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let count = buffer.withUnsafeMutableBytes { source.read(into: $0) }
            if count < 0 { return (out, true) }
            if count == 0 { return (out, false) }
            out += buffer[0..<count]
        }
    }

    @Test(arguments: [1, 7, 64 * 1024])
    func theBodyIsTheHeadEachLineAndTheTailInTheAnnouncedSize(chunk: Int) throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = #"{"custom_id": "a", "url": "/v1/chat/completions", "body": {"model": "m",\#n "messages": []}}"#
        let second = #"{"model": "m", "messages": [{"role": "user", "content": "line\nbreak"}]}"#
        let a = try write(first, dir + "/a.json")
        let b = try write(second, dir + "/b.json")
        let bytesA = Array(first.utf8)
        let prefix = Array(#"{"custom_id": "a", "url": "/v1/chat/completions", "body": "#.utf8)
        let rangeA = prefix.count..<(bytesA.count - 1)
        let lineA = LaneUploadSource.line(id: "a", url: "/v1/chat/completions", body: Array(bytesA[rangeA]))
        let lineB = LaneUploadSource.line(id: "b", url: "/v1/chat/completions", body: Array(second.utf8))
        #expect(String(decoding: lineA, as: UTF8.self) == #"{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}"# + "\n")
        #expect(lineB.filter { $0 == 0x0A }.count == 1, "the escaped newline in the text stays escaped; only the line's end is a newline")
        let source = try #require(LaneUploadSource(group: "g1", url: "/v1/chat/completions", lines: [
            .init(id: "a", path: dir + "/a.json", body: rangeA, identity: a, size: lineA.count),
            .init(id: "b", path: dir + "/b.json", body: 0..<second.utf8.count, identity: b, size: lineB.count),
        ]))
        let read = drain(source, chunk: chunk)
        let multipart = LaneUploadBody(group: "g1")
        #expect(!read.failed)
        let expected: [UInt8] = multipart.head + lineA + lineB + multipart.tail
        #expect(read.bytes == expected)
        #expect(read.bytes.count == source.size)
    }

    @Test func aFileChangedAfterItJoinedFailsTheUpload() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let text = #"{"model": "m", "messages": []}"#
        let identity = try write(text, dir + "/a.json")
        let line = LaneUploadSource.line(id: "a", url: "/v1/chat/completions", body: Array(text.utf8))
        _ = try write(#"{"model": "other", "messages": []}"#, dir + "/a.json")
        let source = try #require(LaneUploadSource(group: "g1", url: "/v1/chat/completions", lines: [
            .init(id: "a", path: dir + "/a.json", body: 0..<text.utf8.count, identity: identity, size: line.count),
        ]))
        #expect(drain(source, chunk: 4096).failed)
        #expect(source.failure?.contains("changed after it joined the group") == true)
    }
}
