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

    @Test func theFirstStartMakesTheIDAndLaterStartsReadIt() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        let logger = Logger(minimum: .error)
        let made = try SpoolIDFile.readOrMake(layout, logger: logger)
        #expect(made.utf8.count == 32)
        #expect(try SpoolIDFile.readOrMake(layout, logger: logger) == made)
        #expect(try SpoolIDFile.read(layout.spoolIDFile) == .id(made))
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.state).filter { $0.hasPrefix(".spool-id.") }.isEmpty, "no temporary left")
        let other = try spool()
        defer { try? FileManager.default.removeItem(atPath: other.root) }
        #expect(try SpoolIDFile.readOrMake(other, logger: logger) != made, "each spool its own")
    }

    @Test(arguments: ["", "not an id\n", "ABCDEF0123456789ABCDEF0123456789", String(repeating: "a", count: 65), "0123456789abcdef\n\n\n"])
    func whatIsNoIDIsMadeAgain(content: String) throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        try DurableFile.write(Array(content.utf8), to: layout.spoolIDFile, syncDirectory: false)
        #expect(try SpoolIDFile.read(layout.spoolIDFile) == .unusable)
        let made = try SpoolIDFile.readOrMake(layout, logger: Logger(minimum: .error))
        #expect(try SpoolIDFile.read(layout.spoolIDFile) == .id(made))
    }

    @Test func noFileIsNoID() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        #expect(try SpoolIDFile.read(layout.spoolIDFile) == nil)
    }

    @Test func aLinkIsNotReadAsTheID() throws {
        let layout = try spool()
        defer { try? FileManager.default.removeItem(atPath: layout.root) }
        try DurableFile.write(Array("0123456789abcdef0123456789abcdef".utf8), to: layout.root + "/elsewhere", syncDirectory: false)
        #expect(symlink(layout.root + "/elsewhere", layout.spoolIDFile) == 0)
        #expect(throws: SystemError.self) { try SpoolIDFile.read(layout.spoolIDFile) }
    }
}
