import Foundation
import Glibc
import Synchronization
import Testing
@testable import LLMSpoolCore

/// The logger's best-effort helper for reads: the value when the read works, nil without a
/// word for a file that is absent, nil with a warning naming the read for anything else.
@Suite struct BestEffortValueTests {
    func logged(_ body: (Logger) -> Void) -> [String] {
        let lines = Mutex<[String]>([])
        let logger = Logger(minimum: .debug, sink: { line in lines.withLock { $0.append(line) } })
        body(logger)
        return lines.withLock { $0 }
    }

    @Test func aValueComesBackAndNothingIsLogged() {
        var value: Int?
        let lines = logged { logger in value = logger.bestEffortValue("reading a number") { 42 } }
        #expect(value == 42)
        #expect(lines.isEmpty)
    }

    @Test func anAbsentFileIsNilWithoutAWord() {
        var value: stat?
        let path = NSTemporaryDirectory() + "llmspool-absent-\(UUID().uuidString)"
        let lines = logged { logger in value = logger.bestEffortValue("looking at a file") { try Syscall.lstat(path) } }
        #expect(value == nil)
        #expect(lines.isEmpty, "ENOENT is the expected answer: \(lines)")
    }

    @Test func anyOtherFailureIsNilWithAWarningNamingTheRead() throws {
        // A path through a regular file: ENOTDIR, which is not the expected ENOENT.
        let file = NSTemporaryDirectory() + "llmspool-file-\(UUID().uuidString)"
        try DurableFile.write(Array("x".utf8), to: file, mode: 0o600)
        defer { unlink(file) }
        var value: stat?
        let lines = logged { logger in value = logger.bestEffortValue("looking at a file", id: "q1") { try Syscall.lstat(file + "/inside") } }
        #expect(value == nil)
        #expect(lines.count == 1)
        #expect(lines.first?.contains("looking at a file failed") == true)
        #expect(lines.first?.contains("lstat") == true, "the reason names the call: \(lines)")
    }
}
