import Foundation
import Glibc
@testable import LLMSpoolCore
import LLMSpoolSystem
import Testing

/// The live status's last resort on a full disk: written over itself in place, padded with
/// blanks, only into the blocks the file has.
@Suite struct DurableFileOverwriteTests {
    let folder = NSTemporaryDirectory() + "llmspool-overwrite-\(UUID().uuidString)"
    let full = SystemError(errno: ENOSPC, call: "write", path: "status.tmp")

    func make(_ text: String) throws -> String {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/status.json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func content(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    @Test func aShorterContentIsPaddedToTheOldLength() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = try make(String(repeating: "x", count: 100))
        try DurableFile.overwrite(Array("{\"a\":1}\n".utf8), at: path, else: full)
        #expect(try content(path) == "{\"a\":1}\n" + String(repeating: " ", count: 92))
        #expect(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Int] == ["a": 1],
                "blanks after JSON are JSON")
    }

    @Test func aLongerContentWithinTheFilesBlocksGrowsIt() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = try make("{}")
        let blocks = Int(try Syscall.lstat(path).st_blocks) * 512
        try #require(blocks >= 64, "the filesystem gives a small file a block")
        let longer = String(repeating: "y", count: blocks)
        try DurableFile.overwrite(Array(longer.utf8), at: path, else: full)
        #expect(try content(path) == longer)
    }

    @Test func aContentBeyondTheFilesBlocksOrNoFileIsTheFullDisk() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = try make("{}")
        let blocks = Int(try Syscall.lstat(path).st_blocks) * 512
        #expect(throws: full) { try DurableFile.overwrite([UInt8](repeating: 0x7A, count: blocks + 1), at: path, else: full) }
        #expect(try content(path) == "{}", "nothing written")
        #expect(throws: full) { try DurableFile.overwrite(Array("{}".utf8), at: folder + "/none.json", else: full) }
    }
}
