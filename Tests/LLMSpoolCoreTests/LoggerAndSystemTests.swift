import Foundation
import Glibc
import Synchronization
import Testing
@testable import LLMSpoolCore

@Suite struct LoggerAndSystemTests {
    final class Lines: Sendable {
        let value = Mutex<[String]>([])
    }

    @Test func valuesAreEscapedSoNoNameCanForgeALine() {
        let lines = Lines()
        let logger = Logger(minimum: .info, sink: { line in lines.value.withLock { $0.append(line) } })
        logger.info("done", id: "evil\nerror: forged\u{1B}[31m", ["path": "a b"])
        logger.debug("hidden")
        let written = lines.value.withLock { $0 }
        #expect(written.count == 1)
        #expect(written[0] == #"info: done id="evil\x0aerror: forged\x1b[31m" path="a b""#)
    }

    @Test func jsonLinesAreJSON() throws {
        let lines = Lines()
        let logger = Logger(minimum: .debug, format: .json, sink: { line in lines.value.withLock { $0.append(line) } })
        logger.warning("w", id: "x\n")
        let line = try #require(lines.value.withLock { $0.first })
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object == ["level": "warning", "msg": "w", "id": "x\n"])
    }

    @Test func systemErrorsCarryErrnoCallAndPath() {
        let error = #expect(throws: SystemError.self) { try Syscall.open("/nonexistent/llmspool", O_RDONLY) }
        #expect(error?.errno == ENOENT)
        #expect(error?.call == "open")
        #expect(error?.path == "/nonexistent/llmspool")
        #expect(error?.description.contains("No such file") == true)
        #expect(SystemError(errno: ENOSPC, call: "write", path: nil).isOutOfSpace)
    }

    @Test func durableWritesReplaceWholeFilesAndLeaveNoTemporary() throws {
        let directory = NSTemporaryDirectory() + "llmspool-durable-\(UUID().uuidString)"
        try Syscall.mkdir(directory, mode: 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/r.json"
        try DurableFile.write(Array("first".utf8), to: path)
        try DurableFile.write(Array("second".utf8), to: path)
        #expect(try FileReader.prefix(path: path, limit: 100) == Array("second".utf8))
        #expect(try Syscall.listDirectory(directory) == ["r.json"])
        #expect(try Syscall.lstat(path).st_mode & 0o777 == 0o600)
    }
}
