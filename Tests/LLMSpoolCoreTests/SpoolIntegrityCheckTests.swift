import Foundation
import Glibc
@testable import LLMSpoolCore
import LLMSpoolModel
import LLMSpoolSystem
import Testing

/// `SpoolLayout.integrityProblem`: what makes the spool's names untrustworthy, and what does not.
@Suite struct SpoolIntegrityCheckTests {
    let base = NSTemporaryDirectory() + "llmspool-integrity-\(UUID().uuidString)"

    private func made() throws -> SpoolLayout {
        try Syscall.mkdir(base, mode: 0o700)
        let layout = SpoolLayout(root: base + "/spool")
        try layout.create()
        return try layout.pinnedNow(spoolID: nil)
    }

    @Test func theFolderPinnedAtStartIsTrusted() throws {
        let layout = try made()
        defer { try? Syscall.removeTree(base) }
        #expect(layout.rootPin != nil)
        #expect(layout.integrityProblem() == nil)
    }

    @Test func aMissingFolderIsNoProblemButAMissingRootIs() throws {
        let layout = try made()
        defer { try? Syscall.removeTree(base) }
        #expect(rmdir(layout.failed) == 0)
        #expect(layout.integrityProblem() == nil)
        #expect(rename(layout.root, layout.root + ".away") == 0)
        #expect(layout.integrityProblem()?.contains("is gone") == true)
    }

    @Test func anotherFolderUnderTheRootsNameIsRefused() throws {
        let layout = try made()
        defer { try? Syscall.removeTree(base) }
        #expect(rename(layout.root, layout.root + ".away") == 0)
        try SpoolLayout(root: layout.root).create()
        #expect(layout.integrityProblem()?.contains("is not the folder the daemon started with") == true)
        // The same folder back under its name is trusted again.
        try Syscall.removeTree(layout.root)
        #expect(rename(layout.root + ".away", layout.root) == 0)
        #expect(layout.integrityProblem() == nil)
    }

    @Test func aLinkToTheSameFolderLeadsWhereTheRootDid() throws {
        let layout = try made()
        defer { try? Syscall.removeTree(base) }
        #expect(rename(layout.root, layout.root + ".moved") == 0)
        #expect(symlink(layout.root + ".moved", layout.root) == 0)
        #expect(layout.integrityProblem() == nil)
    }

    @Test(arguments: ["outgoing", "incoming", "failed", "state", "hold"])
    func aFolderThatIsALinkOrAFileIsRefused(_ name: String) throws {
        let layout = try made()
        defer { try? Syscall.removeTree(base) }
        let folder = layout.root + "/" + name
        try? Syscall.removeTree(folder)
        #expect(symlink(base, folder) == 0)
        #expect(layout.integrityProblem()?.contains("\(folder) is a symbolic link") == true)
        // Without a pin (the commands) the folders are looked at all the same.
        #expect(SpoolLayout(root: layout.root).integrityProblem()?.contains("is a symbolic link") == true)
        #expect(unlink(folder) == 0)
        try DurableFile.write(Array("x".utf8), to: folder)
        #expect(layout.integrityProblem()?.contains("\(folder) is not a folder") == true)
    }

    /// `failed/superseded` is under `failed`, not looked at with the top folders: the
    /// archive step refuses it as a link instead of moving earlier failures outside.
    @Test func earlierFailuresAreNotMovedThroughALinkedSupersededFolder() throws {
        let layout = try made()
        defer { try? Syscall.removeTree(base) }
        let outside = base + "/outside"
        try Syscall.mkdir(outside, mode: 0o700)
        #expect(symlink(outside, layout.superseded) == 0)
        try DurableFile.write(Array("{}".utf8), to: layout.errorRecord("x"))
        let result = PublicationExecutor(files: SpoolFiles(layout: layout)).run([.archiveIfPresent(layout.errorRecord("x"), into: layout.superseded)])
        guard case .failed(at: 0, _, let error) = result else {
            Issue.record("the archive ran: \(result)")
            return
        }
        #expect("\(error)".contains("is not a folder"))
        #expect(FileManager.default.fileExists(atPath: layout.errorRecord("x")))
        #expect(try Syscall.listDirectory(outside).isEmpty)
    }

    @Test func aRefusedSpoolWritesNoPlanStep() throws {
        let layout = try made()
        defer { try? Syscall.removeTree(base) }
        #expect(rename(layout.root, layout.root + ".away") == 0)
        try SpoolLayout(root: layout.root).create()
        let executor = PublicationExecutor(files: SpoolFiles(layout: layout))
        let result = executor.run([.writeFile(layout.errorRecord("x"), Array("{}".utf8))])
        guard case .failed(at: 0, _, let error) = result else {
            Issue.record("the plan ran: \(result)")
            return
        }
        #expect(error is SpoolElsewhereError)
        #expect(!FileManager.default.fileExists(atPath: layout.errorRecord("x")))
        let batch = executor.runBatch([[.writeFile(layout.errorRecord("y"), [])], [.syncFolder(layout.failed)]])
        #expect(batch.allSatisfy { $0?.index == 0 })
        #expect(!FileManager.default.fileExists(atPath: layout.errorRecord("y")))
    }
}
