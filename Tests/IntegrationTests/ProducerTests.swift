import Foundation
import Glibc
import LLMSpoolCore
@testable import LLMSpoolStub
import Testing

/// Requests saved by real programs, each the way it writes files: in place, through a
/// temporary and a rename, with backups and swap files. Each request must be sent exactly
/// once, and none of the programs' own files ever.
@Suite(.serialized) struct ProducerTests {
    static func json(_ prompt: String) -> String {
        #"{"model": "stub-model", "messages": [{"role": "user", "content": "\#(prompt)"}]}"#
    }

    /// Runs `write` against a fresh daemon; returns once the request `id` is answered, after
    /// checking what the stub and the folders saw.
    func expectSentOnce(_ id: String, prompt: String, settle: Double = 2, suffix: String = SpoolLayout.requestSuffix,
                        config: [String: Any] = [:], _ write: (Harness, String) throws -> Void) throws {
        let harness = try Harness()
        defer { harness.stop() }
        try harness.startStub()
        try harness.startDaemon(config: ["settle_seconds": settle, "default_model": "stub-model"].merging(config) { $1 })
        try write(harness, "\(harness.layout.outgoing)/\(id)\(suffix)")
        do {
            try waitUntil("\(id) is answered", timeout: 30) { FileManager.default.fileExists(atPath: harness.layout.result(id)) }
        } catch {
            // The daemon's own account is what tells a lost request from a slow one.
            throw HarnessError("\(error); outgoing: \(harness.files(in: harness.layout.outgoing)), failed: \(harness.files(in: harness.layout.failed)); daemon log:\n\(harness.log)")
        }
        try waitUntil("outgoing holds no request", timeout: 10) {
            harness.files(in: harness.layout.outgoing).allSatisfy { if case .request = RequestName.classify($0) { false } else { true } }
        }
        // Give a late duplicate the time to show itself: one more settle period and a scan.
        usleep(UInt32((settle + 0.5) * 1_000_000))
        let arrivals = try harness.stubArrivals()
        #expect(arrivals.map(\.prompt) == [prompt], "sent exactly once, and nothing else was sent")
        #expect(harness.files(in: harness.layout.failed).isEmpty, "no temporary file was taken for a request")
        #expect(Harness.content(of: try harness.json(harness.layout.result(id))) == StubAnswer.content(prompt: prompt, tokens: 8))
        if suffix != SpoolLayout.requestSuffix {
            #expect(FileManager.default.fileExists(atPath: harness.layout.transcript(id)), "a prompt file's transcript")
        }
    }

    /// Writes in place as VS Code saves: the file truncated, then written in two steps.
    static func writeInTwoSteps(_ text: String, to path: String, pause: useconds_t = 300_000) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw HarnessError("cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let half = bytes.count / 2
        for part in [bytes[..<half], bytes[half...]] {
            let written = part.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == part.count else { throw HarnessError("short write to \(path)") }
            usleep(pause)
        }
    }

    /// Whether the filesystem the harness's spools live on can make a file without a name.
    static let temporaryFolderTakesFilesWithoutAName: Bool = {
        let fd = open(NSTemporaryDirectory(), O_WRONLY | O_DIRECTORY | 0o20000000, 0o600)
        if fd >= 0 { close(fd) }
        return fd >= 0
    }()

    static let promptText = "---\nsystem: Be brief.\n---\n## user\nQuestion from an editor\n"

    @Test func vsCodeWritingAJSONRequestInPlaceInTwoSteps() throws {
        try expectSentOnce("via-code", prompt: "written in two steps") { _, path in
            try Self.writeInTwoSteps(Self.json("written in two steps"), to: path)
        }
    }

    /// A writer that stops longer than settle_seconds with its file still open (a slow
    /// pipe, a machine busy elsewhere) has not finished: the daemon waits for the close.
    @Test(arguments: [".json", ".md"])
    func aWriterPausingLongerThanTheSettlePeriodIsWaitedFor(suffix: String) throws {
        let prompt = "paused mid-file"
        // Scans every second: one reads the file half written, as a periodic scan or the
        // start's can.
        try expectSentOnce("via-pause", prompt: prompt, settle: 1, suffix: suffix, config: ["rescan_interval_seconds": 1]) { _, path in
            // A prompt file's first half is itself a valid prompt: it must not be sent cut.
            try Self.writeInTwoSteps(suffix == ".md" ? "## user\n\(prompt)" : Self.json(prompt), to: path, pause: 2_500_000)
        }
    }

    /// A file made without a name (`O_TMPFILE`), written, then linked in: its close comes
    /// under the kernel's name `#<inode>`, which the daemon matches to the name it was
    /// linked in as. Before, such a file waited for the periodic rescan (60 s here).
    @Test(.enabled(if: ProducerTests.temporaryFolderTakesFilesWithoutAName, "the temporary folder's filesystem has no O_TMPFILE (overlayfs before Linux 6.6)"))
    func aFileMadeWithoutANameAndLinkedInIsReadAtItsClose() throws {
        try expectSentOnce("via-tmpfile", prompt: "linked in") { harness, path in
            let fd = open(harness.layout.outgoing, O_WRONLY | O_DIRECTORY | 0o20000000, 0o600)  // O_TMPFILE: __O_TMPFILE | O_DIRECTORY, which Swift does not import
            guard fd >= 0 else { throw HarnessError("cannot make a file without a name in \(harness.layout.outgoing): errno \(errno)") }
            defer { close(fd) }
            let bytes = Array(Self.json("linked in").utf8)
            guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else { throw HarnessError("short write") }
            guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 else {
                throw HarnessError("cannot link the file in as \(path): errno \(errno)")
            }
        }
    }

    /// A file renamed within `outgoing` while its writer still writes it (a producer that
    /// names its file early) keeps its writer: read at the close, not at the rename.
    /// A producer's hidden temporary renamed into place before it is closed, alike.
    @Test(arguments: ["early.md", ".early.md.tmp"])
    func aFileRenamedWhileItsWriterHoldsItOpenIsReadAtTheClose(firstName: String) throws {
        let prompt = "renamed while written"
        try expectSentOnce("via-rename-open", prompt: prompt, suffix: ".md") { harness, path in
            let first = "\(harness.layout.outgoing)/\(firstName)"
            let fd = open(first, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0 else { throw HarnessError("cannot open \(first): errno \(errno)") }
            defer { close(fd) }
            let bytes = Array("## user\n\(prompt)".utf8)
            let half = bytes.count / 2
            guard bytes[..<half].withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == half else { throw HarnessError("short write") }
            try Syscall.rename(first, path)
            usleep(2_000_000)
            guard bytes[half...].withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count - half else { throw HarnessError("short write") }
        }
    }

    @Test func vsCodeSavingAPromptDraftThenTheFinishedPromptInPlace() throws {
        try expectSentOnce("via-code-md", prompt: "Question from an editor", suffix: ".md") { harness, path in
            try Self.writeInTwoSteps("---\ndraft: true\n---\nQuestion fr", to: path)
            try waitUntil("the draft is seen", timeout: 10) { harness.log.contains("left in outgoing as a draft") }
            try Self.writeInTwoSteps(Self.promptText, to: path)
        }
    }

    @Test(.enabled(if: Harness.which("vim") != nil, "vim is not installed"))
    func vimSavingAPromptFile() throws {
        try expectSentOnce("via-vim-md", prompt: "Question from an editor", suffix: ".md") { _, path in
            let lines = Self.promptText.split(separator: "\n").map { "'\($0)'" }.joined(separator: ", ")
            try Harness.run(Harness.which("vim")!, ["-u", "NONE", "-i", "NONE", "-N", "-es",
                                                    "-c", "set backup writebackup backupcopy=no swapfile",
                                                    "-c", "call setline(1, [\(lines)])", "-c", "wq", path])
        }
    }

    @Test(.enabled(if: Harness.which("vim") != nil, "vim is not installed"))
    func vimSavingADraftThenRemovingTheDraftLine() throws {
        try expectSentOnce("via-vim-draft", prompt: "Question from an editor", suffix: ".md") { harness, path in
            try Harness.run(Harness.which("vim")!, ["-u", "NONE", "-i", "NONE", "-N", "-es",
                                                    "-c", "call setline(1, ['---', 'draft: true', '---', 'Question fr'])", "-c", "wq", path])
            try waitUntil("the draft is seen", timeout: 10) { harness.log.contains("left in outgoing as a draft") }
            let lines = Self.promptText.split(separator: "\n").map { "'\($0)'" }.joined(separator: ", ")
            // Edited in place (vim's default for an existing file it may write), with a backup.
            try Harness.run(Harness.which("vim")!, ["-u", "NONE", "-i", "NONE", "-N", "-es",
                                                    "-c", "set backup writebackup",
                                                    "-c", "%delete", "-c", "call setline(1, [\(lines)])", "-c", "wq", path])
        }
    }

    @Test(.enabled(if: Harness.which("emacs") != nil, "emacs is not installed"))
    func emacsSavingAPromptFile() throws {
        try expectSentOnce("via-emacs-md", prompt: "Question from an editor", suffix: ".md") { _, path in
            let text = Self.promptText.replacingOccurrences(of: "\n", with: "\\n")
            try Harness.run(Harness.which("emacs")!, ["--batch", "-Q", "--eval",
                                                      "(progn (setq make-backup-files t) (find-file \"\(path)\") (insert \"\(text)\") (save-buffer))"])
        }
    }

    @Test func cp() throws {
        try expectSentOnce("via-cp", prompt: "copied") { harness, path in
            try Self.json("copied").write(toFile: harness.root + "/source.json", atomically: false, encoding: .utf8)
            try Harness.run("/bin/cp", [harness.root + "/source.json", path])
        }
    }

    @Test func mv() throws {
        try expectSentOnce("via-mv", prompt: "moved") { harness, path in
            try Self.json("moved").write(toFile: harness.root + "/source.json", atomically: false, encoding: .utf8)
            try Harness.run("/bin/mv", [harness.root + "/source.json", path])
        }
    }

    @Test func shellRedirectionInSeveralSteps() throws {
        try expectSentOnce("via-shell", prompt: "piecemeal") { _, path in
            let script = """
            printf '{"model": "stub-model",' > '\(path)'
            sleep 0.4
            printf ' "messages": [{"role": "user",' >> '\(path)'
            sleep 0.4
            printf ' "content": "piecemeal"}]}' >> '\(path)'
            """
            try Harness.run("/bin/sh", ["-c", script])
        }
    }

    @Test(.enabled(if: Harness.which("rsync") != nil, "rsync is not installed"))
    func rsync() throws {
        try expectSentOnce("via-rsync", prompt: "synced") { harness, path in
            try Self.json("synced").write(toFile: harness.root + "/via-rsync.json", atomically: false, encoding: .utf8)
            try Harness.run(Harness.which("rsync")!, [harness.root + "/via-rsync.json", DurableFile.directory(of: path) + "/"])
        }
    }

    @Test(.enabled(if: Harness.which("vim") != nil, "vim is not installed"))
    func vim() throws {
        try expectSentOnce("via-vim", prompt: "typed in vim") { harness, path in
            // Backups and a swap file on: vim writes path~, .via-vim.json.swp and probes with 4913.
            try Harness.run(Harness.which("vim")!, ["-u", "NONE", "-i", "NONE", "-N", "-es",
                                                    "-c", "set backup writebackup backupcopy=no swapfile",
                                                    "-c", "call setline(1, ['\(Self.json("typed in vim"))'])",
                                                    "-c", "wq", path])
        }
    }

    @Test(.enabled(if: Harness.which("vim") != nil, "vim is not installed"))
    func vimEditingAnInvalidDraftInPlace() throws {
        try expectSentOnce("via-vim-edit", prompt: "fixed in vim") { harness, path in
            // A draft saved broken, then fixed: judged only after it settles, sent once.
            try Harness.run(Harness.which("vim")!, ["-u", "NONE", "-i", "NONE", "-N", "-es", "-c", "call setline(1, ['{\"model\": '])",
                                                    "-c", "wq", path])
            try Harness.run(Harness.which("vim")!, ["-u", "NONE", "-i", "NONE", "-N", "-es",
                                                    "-c", "set backup writebackup backupcopy=no",
                                                    "-c", "call setline(1, ['\(Self.json("fixed in vim"))'])",
                                                    "-c", "wq", path])
        }
    }

    @Test(.enabled(if: Harness.which("emacs") != nil, "emacs is not installed"))
    func emacs() throws {
        try expectSentOnce("via-emacs", prompt: "typed in emacs") { harness, path in
            let json = Self.json("typed in emacs").replacingOccurrences(of: "\"", with: "\\\"")
            try Harness.run(Harness.which("emacs")!, ["--batch", "-Q", "--eval",
                                                      "(progn (setq make-backup-files t) (find-file \"\(path)\") (insert \"\(json)\") (save-buffer))"])
        }
    }

    @Test(.enabled(if: Harness.which("nano") != nil && Harness.which("tmux") != nil, "nano or tmux is not installed"))
    func nano() throws {
        try nano("via-nano", text: Self.json("typed in nano"), prompt: "typed in nano", suffix: SpoolLayout.requestSuffix)
    }

    @Test(.enabled(if: Harness.which("nano") != nil && Harness.which("tmux") != nil, "nano or tmux is not installed"))
    func nanoSavingAPromptFile() throws {
        try nano("via-nano-md", text: "Question from an editor", prompt: "Question from an editor", suffix: ".md")
    }

    func nano(_ id: String, text: String, prompt: String, suffix: String) throws {
        try expectSentOnce(id, prompt: prompt, suffix: suffix) { harness, path in
            let tmux = Harness.which("tmux")!
            let session = "llmspool-nano-\(getpid())"
            let socket = harness.root + "/tmux.sock"
            try Harness.run(tmux, ["-S", socket, "new-session", "-d", "-s", session, "-x", "200", "-y", "50",
                                   "\(Harness.which("nano")!) --ignorercfiles --backup '\(path)'"])
            // The server's pid as well as its socket: the socket goes with the test's folder,
            // and a server that outlived its kill-server would then be out of reach.
            let server = Int32((try? Harness.run(tmux, ["-S", socket, "display-message", "-p", "#{pid}"]))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
            defer {
                _ = try? Harness.run(tmux, ["-S", socket, "kill-server"])
                if server > 0 { kill(server, SIGKILL) }
            }
            try waitUntil("nano is up", timeout: 10) {
                (try? Harness.run(tmux, ["-S", socket, "capture-pane", "-p", "-t", session]))?.contains("GNU nano") == true
            }
            try Harness.run(tmux, ["-S", socket, "send-keys", "-t", session, "-l", text])
            try Harness.run(tmux, ["-S", socket, "send-keys", "-t", session, "C-o"])
            try waitUntil("nano asks for the file name", timeout: 10) {
                (try? Harness.run(tmux, ["-S", socket, "capture-pane", "-p", "-t", session]))?.contains("File Name to Write") == true
            }
            try Harness.run(tmux, ["-S", socket, "send-keys", "-t", session, "Enter"])
            // The daemon may have answered and removed the request before this looks.
            try waitUntil("nano saved", timeout: 10) {
                FileManager.default.fileExists(atPath: path) || FileManager.default.fileExists(atPath: harness.layout.result(id))
            }
            try Harness.run(tmux, ["-S", socket, "send-keys", "-t", session, "C-x"])
        }
    }
}
