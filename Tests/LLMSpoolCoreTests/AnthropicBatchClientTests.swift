import Foundation
import Glibc
import LLMSpoolModel
import Testing
@testable import LLMSpoolCore
@testable import LLMSpoolStub

/// The Message Batch create's body as libcurl reads it (the framing around each member's
/// body, compacted, in the announced size; a changed file fails), and the client's calls
/// against the stub's Message Batches over a real loopback socket.
@Suite(.serialized) struct AnthropicBatchClientTests {
    func folder() throws -> String {
        let path = NSTemporaryDirectory() + "llmspool-anthropic-batch-\(UUID().uuidString)"
        try Syscall.mkdir(path, mode: 0o700)
        return path
    }

    func member(_ id: String, _ text: String, dir: String) throws -> LaneUploadSource.Line {
        let path = dir + "/\(id).json"
        try DurableFile.write(Array(text.utf8), to: path, syncDirectory: false)
        let size = LaneUploadSource.line(id: id, url: MessagesDialect().path, body: Array(text.utf8)).count
        return LaneUploadSource.Line(id: id, path: path, body: 0..<text.utf8.count, identity: FileIdentity(try Syscall.lstat(path)), size: size)
    }

    func drain(_ source: AnthropicBatchSource, chunk: Int) -> (bytes: [UInt8], failed: Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let count = buffer.withUnsafeMutableBytes { source.read(into: $0) }
            if count < 0 { return (out, true) }
            if count == 0 { return (out, false) }
            out += buffer[0..<count]
        }
    }

    static let first = #"{"model": "messages-model", "max_tokens": 16,"# + "\n" + #" "messages": [{"role": "user", "content": "Hi"}]}"#
    static let second = #"{"model":"messages-model","max_tokens":16,"messages":[{"role":"user","content":"line\nbreak"}],"stub":{"batch_line":"fail"}}"#

    @Test(arguments: [1, 7, 64 * 1024])
    func theCreateBodyIsTheFramingAroundEachCompactedBodyInTheAnnouncedSize(chunk: Int) throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lines = [try member("a", Self.first, dir: dir), try member("b", Self.second, dir: dir)]
        let source = try #require(AnthropicBatchSource(group: "g1", url: MessagesDialect().path, lines: lines))
        let read = drain(source, chunk: chunk)
        #expect(!read.failed)
        let expected = #"{"requests":[{"custom_id":"g1-0","params":{"model":"messages-model","max_tokens":16,"messages":[{"role":"user","content":"Hi"}]}},"#
            + #"{"custom_id":"g1-1","params":"# + Self.second + "}]}"
        #expect(String(decoding: read.bytes, as: UTF8.self) == expected)
        #expect(read.bytes.count == source.size)
    }

    @Test func aFileChangedAfterItJoinedFailsTheCreateAndAnImpossibleSizeIsRefused() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var line = try member("a", Self.first, dir: dir)
        line.size += 1
        let source = try #require(AnthropicBatchSource(group: "g1", url: MessagesDialect().path, lines: [line]))
        #expect(drain(source, chunk: 4096).failed)
        #expect(source.failure?.contains("a.json changed") == true, "\(source.failure ?? "")")
        line.size = 3
        #expect(AnthropicBatchSource(group: "g1", url: MessagesDialect().path, lines: [line]) == nil)
        line.size = Int.max
        #expect(AnthropicBatchSource(group: "g1", url: MessagesDialect().path, lines: [line, line]) == nil)
    }

    @Test func theClientCreatesPollsListsDownloadsAndCancelsAgainstTheStub() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stub = try StubServer(batchOptions: StubBatchOptions(seconds: 0, createFaults: [.status(429)]))
        defer { stub.stop() }
        let base = "http://127.0.0.1:\(stub.port)"
        let endpoint = Endpoint(baseURL: base, apiKey: Secret("sk-ant-test"), api: .anthropic, batch: true)
        let client = AnthropicBatchClient(endpoint: endpoint, http: LaneHTTP(settings: .init(connectTimeoutSeconds: 5, idleTimeoutSeconds: 10), stop: LaneStopFlag()))
        let lines = [try member("a", Self.first, dir: dir), try member("b", Self.second, dir: dir)]
        func source() throws -> AnthropicBatchSource { try #require(AnthropicBatchSource(group: "g1", url: MessagesDialect().path, lines: lines)) }

        guard case .failed(let retryable, _, let message) = client.create(source: try source()) else {
            Issue.record("the 429 was not reported as a failure")
            return
        }
        #expect(retryable && message.contains("429"), "\(message)")
        guard case .created(let id) = client.create(source: try source()) else {
            Issue.record("the create did not report the batch")
            return
        }
        guard case .listed(let page) = client.list(after: nil) else {
            Issue.record("the list was not read")
            return
        }
        #expect(page.entries.map(\.id) == [id] && !page.hasMore)
        guard case .polled(let status) = client.poll(batchID: id) else {
            Issue.record("the poll was not read")
            return
        }
        #expect(status.status == "completed" && status.completed == 1 && status.failed == 1 && status.total == 2)
        #expect(status.outputFileID?.hasSuffix("/\(id)/results") == true)

        let path = dir + "/results.jsonl"
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
        let failure = client.downloadResults(batchID: id, to: fd, path: path)
        try fd.close()
        #expect(failure == nil)
        let results = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try AnthropicBatchAnswers.resultLine(Array($0.utf8)) }
        #expect(results.map(\.customID) == ["g1-0", "g1-1"])
        if case .succeeded(let code, _, let body) = results.first?.result {
            #expect(code == 200 && String(decoding: body, as: UTF8.self).contains("Echo: Hi"))
        } else {
            Issue.record("the first member did not succeed: \(String(describing: results.first))")
        }
        if case .failed(let code, _, let status, _) = results.last?.result { #expect(code == "api_error" && status == 500) } else {
            Issue.record("the second member did not fail: \(String(describing: results.last))")
        }

        guard case .created(let other) = client.create(source: try source()) else {
            Issue.record("the second create did not report the batch")
            return
        }
        guard case .listed(let older) = client.list(after: other) else {
            Issue.record("the list after the newest batch was not read")
            return
        }
        #expect(older.entries.map(\.id) == [id], "the page after the newest batch holds the older one")
        #expect(client.cancel(batchID: other) == .cancelRequested)
        guard case .polled(let cancelled) = client.poll(batchID: other) else {
            Issue.record("the cancelled batch was not read")
            return
        }
        #expect(cancelled.status == "cancelled")
        guard case .failed(let again, _, _) = client.cancel(batchID: "msgbatch_none") else {
            Issue.record("a cancel of no batch was not refused")
            return
        }
        #expect(!again, "a 404 is not tried again")

        let keyless = AnthropicBatchClient(endpoint: Endpoint(baseURL: base, apiKey: nil, api: .anthropic, batch: true), http: client.http)
        guard case .failed(_, _, let refusal) = keyless.poll(batchID: id) else {
            Issue.record("a poll without the key was answered")
            return
        }
        #expect(refusal.contains("401") && refusal.contains("x-api-key"), "\(refusal)")
    }
}
