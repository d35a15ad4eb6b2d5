import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

@Suite struct SpoolIDFileTests {
    func spool() throws -> SpoolLayout {
        let layout = SpoolLayout(root: NSTemporaryDirectory() + "llmspool-id-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: layout.root, withIntermediateDirectories: true)
        try layout.create()
        return layout
    }

    let logger = Logger(minimum: .error)

    @Test func theFirstStartMakesTheIDAndLaterStartsReadIt() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let made = try SpoolIDFile.readOrMake(layout, logger: logger)
        #expect(SpoolID.parse(Array(made.utf8)) == made)
        #expect(try SpoolIDFile.readOrMake(layout, logger: logger) == made)
        #expect(SpoolIDFile.read(layout.spoolIDFile) == .id(made))
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.state).filter { $0.contains("spool-id.") }.isEmpty, "no temporary left")
        let other = try spool()
        defer { try? FileManager.default.removeItem(atPath: other.root) }
        #expect(try SpoolIDFile.readOrMake(other, logger: logger) != made, "each spool its own")
    }

    /// Daemons starting together on one spool all end with the same id.
    @Test func startsTogetherAgreeOnOneID() async throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let logger = self.logger
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 { group.addTask { try SpoolIDFile.readOrMake(layout, logger: logger) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 1, "\(ids)")
    }

    @Test func whatHoldsNoIDIsSetAsideAndMadeAgain() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        try DurableFile.write(Array("not an id\n".utf8), to: layout.spoolIDFile, syncDirectory: false)
        #expect(SpoolIDFile.read(layout.spoolIDFile) == .unusable)
        let made = try SpoolIDFile.readOrMake(layout, logger: logger)
        #expect(SpoolIDFile.read(layout.spoolIDFile) == .id(made))
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.state).filter { $0.hasPrefix(".spool-id.unusable.") }.count == 1)
    }

    @Test func aLinkIsNotReadAsTheID() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        try DurableFile.write(SpoolID.fileContent("0123456789abcdef0123456789abcdef"), to: layout.root + "/elsewhere", syncDirectory: false)
        #expect(symlink(layout.root + "/elsewhere", layout.spoolIDFile) == 0)
        guard case .unreadable = SpoolIDFile.read(layout.spoolIDFile) else {
            Issue.record("a link was read as the id")
            return
        }
    }

    /// `rm -rf state` while the daemon runs: the id comes back, so a later remount is
    /// still followed; another daemon's new id is taken up.
    @Test func theStatusThreadKeepsTheID() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let made = try SpoolIDFile.readOrMake(layout, logger: logger)
        let pinned = try layout.pinnedNow(spoolID: made)
        let pin = try #require(pinned.rootPin as? SharedRootPin)
        try Syscall.unlink(layout.spoolIDFile)
        SpoolIDFile.keep(pinned, pin: pin, logger: logger)
        #expect(SpoolIDFile.read(layout.spoolIDFile) == .id(made))
        try DurableFile.write(SpoolID.fileContent("fedcba9876543210fedcba9876543210"), to: layout.spoolIDFile, syncDirectory: false)
        SpoolIDFile.keep(pinned, pin: pin, logger: logger)
        #expect(pin.identity.spoolID == "fedcba9876543210fedcba9876543210")
    }
}
