import Foundation
import Testing

/// The official openai and anthropic SDKs, run on result files through `Tests/sdk/parse.py`:
/// a result is right when the SDK's own type parses it unchanged.
enum SDKJudge {
    static let venv = ProcessInfo.processInfo.environment["LLMSPOOL_SDK_VENV"] ?? "/opt/llmspool-sdk"
    static var python: String { venv + "/bin/python" }
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("sdk/parse.py").path

    /// Why the SDKs cannot be asked here, or nil when they can. Under CI (`CI=true`) they
    /// must be there: `.ci/deps --test` installs them, so a missing venv is a failure.
    static var missing: String? {
        if FileManager.default.isExecutableFile(atPath: python) { return nil }
        return "the SDK venv is missing at \(venv): run .ci/sdk-venv (skipped)"
    }

    static var mustRun: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Parses each file as `type` (`ChatCompletion`, `Completion`, `CreateEmbeddingResponse`,
    /// `Response`, `Message`); records an issue naming the SDK's complaint when one fails.
    /// Returns false, recording nothing, when the SDKs are missing outside CI.
    @discardableResult
    static func expectParses(_ type: String, _ paths: [String], jsonl: Bool = false,
                             sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
        if let missing {
            if mustRun { Issue.record("\(missing)", sourceLocation: sourceLocation) }
            return false
        }
        let finished = try Harness.spawnAndWait([python, script, type] + (jsonl ? ["--jsonl"] : []) + paths)
        #expect(finished.status == 0, "the \(type) SDK type refused a result: \(finished.stdout)\(finished.stderr)",
                sourceLocation: sourceLocation)
        return finished.status == 0
    }
}
