import Foundation
import Testing
@testable import LLMSpoolCore

@Suite struct RemoteIntentStoreTests {
    func spool() throws -> SpoolLayout {
        let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-remote-\(UUID().uuidString)")
        try layout.create()
        return layout
    }

    @Test func recordsAreWrittenReadBackAndRemoved() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let store = RemoteIntentStore(layout: layout)
        var intent = RemoteIntent(group: "g1", endpoint: "openai", url: "/v1/chat/completions", createdAt: 7,
                                  members: [.init(id: "a", request: FileIdentity(device: 1, inode: 2, size: 3, modifiedNanoseconds: 4))])
        try store.write(intent)
        intent.state = .uploaded
        intent.inputFileID = "file-1"
        try store.write(intent)
        #expect(try store.loadAll() == [.intent(intent)])
        let names = try FileManager.default.contentsOfDirectory(atPath: layout.remote)
        #expect(names == ["g1.json"], "no temporary left beside it")
        try store.remove(group: "g1")
        #expect(try store.loadAll() == [])
    }

    @Test func aGroupOfFiftyThousandLinesIsWrittenInPiecesAndReadBack() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let store = RemoteIntentStore(layout: layout)
        let batch = FileIdentity(device: 2049, inode: 77, size: 16_500_000, modifiedNanoseconds: 1_700_000_000_000_000_000, bornNanoseconds: 5,
                                 contentHash: 0xfeed)
        let intent = RemoteIntent(group: "g5", state: .polling, endpoint: "openai", url: "/v1/chat/completions", createdAt: 7,
                                  members: (0..<50_000).map { .init(id: ".b4.jsonl.\($0)", request: batch) }, inputFileID: "file-1",
                                  batchID: "batch_1")
        try store.write(intent)
        #expect(try store.loadAll() == [.intent(intent)])
        let size = try #require(try FileManager.default.attributesOfItem(atPath: layout.remoteIntent("g5"))[.size] as? Int)
        #expect(size < 50_000 * 45, "the batch's identity once, not once a line: \(size) bytes")
    }

    @Test func anUnreadableRecordIsNamedAndKept() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        try Data("{\"group\": \"g2\"".utf8).write(to: URL(fileURLWithPath: layout.remoteIntent("g2")))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: layout.remote + "/.g3.json.tmp"))
        let found = try RemoteIntentStore(layout: layout).loadAll()
        #expect(found.count == 1)
        guard case .unreadable(let path, let problem)? = found.first else {
            Issue.record("expected an unreadable record, got \(found)")
            return
        }
        #expect(path == layout.remoteIntent("g2"))
        #expect(problem.hasPrefix("not JSON"))
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func aGroupIDThatCannotNameAFileIsRefused() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let intent = RemoteIntent(group: "../escape", endpoint: "e", url: "/v1/chat/completions", createdAt: 0, members: [])
        #expect(throws: ConfigError.self) { try RemoteIntentStore(layout: layout).write(intent) }
        #expect(!FileManager.default.fileExists(atPath: layout.state + "/escape.json"))
    }
}
