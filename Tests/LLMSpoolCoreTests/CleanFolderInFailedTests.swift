import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// A folder dropped under a request's name is moved to failed/ unread; `clean` removes it
/// with what it holds, never following a link inside. Before, every later clean named it
/// ("Is a directory") and exited 1, and kept its record.
@Suite final class CleanFolderInFailedTests {
    // Each test gets its own instance: its own spool, removed when the test is done.
    let root = NSTemporaryDirectory() + "llmspool-clean-tree-\(UUID().uuidString)"
    lazy var layout = SpoolLayout(root: root + "/spool")

    init() throws {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try layout.create()
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
    }

    @Test func aFolderMovedToFailedIsRemovedWithWhatItHoldsAndNoLinkIsFollowed() throws {
        let outside = root + "/precious.txt"
        try DurableFile.write(Array("keep me".utf8), to: outside)
        let folder = layout.failed + "/dir.json"
        // Deeper than a recursive removal would like, with a link out and a name that is not UTF-8.
        var deep = folder
        for _ in 0..<200 { deep += "/d" }
        try FileManager.default.createDirectory(atPath: deep, withIntermediateDirectories: true)
        #expect(symlink(outside, folder + "/link") == 0)
        #expect(symlink(root, folder + "/d/dirlink") == 0)
        let odd = Array((folder + "/").utf8) + [0xFF, 0xFE] + [0]
        let fd = odd.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o600) } }
        #expect(fd >= 0)
        close(fd)
        try DurableFile.write(Array(#"{"id":"dir","status":"failed","kind":"not-a-regular-file"}"#.utf8), to: layout.errorRecord("dir"))

        let cleaned = try SpoolActions(layout: layout).clean(olderThan: Date().addingTimeInterval(60))
        #expect(cleaned.problems.isEmpty, "\(cleaned.problems)")
        #expect(cleaned.failures == 1)
        #expect(!FileManager.default.fileExists(atPath: folder))
        #expect(!FileManager.default.fileExists(atPath: layout.errorRecord("dir")))
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "keep me", "the link's target stays")
        #expect(FileManager.default.fileExists(atPath: layout.root), "the folder a link named stays")
    }
}
