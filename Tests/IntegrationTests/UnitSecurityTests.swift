import Foundation
import Glibc
import Testing

/// The shipped unit's hardening, as `systemd-analyze security` scores it (offline: no
/// running systemd needed).
@Suite struct UnitSecurityTests {
    @Test(.enabled(if: Harness.which("systemd-analyze") != nil, "systemd-analyze is not installed"))
    func theUnitScoresAtMostTwo() throws {
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../packaging/llmspool.service").standardized.path
        let copy = NSTemporaryDirectory() + "llmspool-security-\(getpid()).service"
        try String(contentsOfFile: unit, encoding: .utf8).write(toFile: copy, atomically: false, encoding: .utf8)
        defer { unlink(copy) }
        let finished = try Harness.spawnAndWait([Harness.which("systemd-analyze")!, "security", "--offline=yes", "--no-pager", copy])
        let output = finished.stdout + finished.stderr
        let range = try #require(output.range(of: #"Overall exposure level for [^:]+: (\d+\.\d)"#, options: .regularExpression), "\(output)")
        let score = try #require(Double(output[range].split(separator: " ").last ?? ""))
        #expect(score <= 2.0, "exposure \(score)")
    }
}
