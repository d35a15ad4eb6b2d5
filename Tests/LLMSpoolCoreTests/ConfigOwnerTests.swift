import Foundation
import Glibc
import LLMSpoolCore
import Testing

/// The daemon's config decides where the API key is sent: besides the mode, the file must
/// be root's or the daemon's user's, and its folder writable by no one else (ssh's rule for
/// its own files). Client commands, which only look for the spool in it, do not ask this.
@Suite(.serialized) struct ConfigOwnerTests {
    let folder: String

    init() throws {
        folder = "/tmp/llmspool-config-owner-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Syscall.mkdir(folder, mode: 0o755)
    }

    func cleanUp() {
        _ = try? FileManager.default.removeItem(atPath: folder)
    }

    func write(_ name: String, in directory: String, owner: uid_t = 0) throws -> String {
        let path = directory + "/" + name
        try DurableFile.write(Array(#"{"spool": "/tmp/spool-of-the-config"}"#.utf8), to: path, syncDirectory: false)
        #expect(chmod(path, 0o644) == 0 && chown(path, owner, gid_t(owner)) == 0)
        return path
    }

    func refusal(_ path: String) -> String? {
        do {
            _ = try Config.loadTrusted(path: path, base: Config())
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give files to another user"))
    func aConfigOfAnotherUsersIsRefusedToTheDaemonOnly() throws {
        defer { cleanUp() }
        let theirs = try write("theirs.json", in: folder, owner: 65534)
        let said = try #require(refusal(theirs), "another user's file is refused")
        #expect(said.contains("config \(theirs) is owned by uid 65534"), "\(said)")
        #expect(said.contains("neither root nor the user the daemon runs as (uid 0"), "\(said)")
        #expect(said.contains("run: chown 0 \(theirs)"), "\(said)")
        #expect(try Config.load(path: theirs).spool == "/tmp/spool-of-the-config", "a client command only looks for the spool in it")
        let mine = try write("mine.json", in: folder)
        #expect(refusal(mine) == nil)
        #expect(try Config.loadTrusted(path: mine, base: Config()).spool == "/tmp/spool-of-the-config")
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give a folder to another user"))
    func aConfigInAFolderOthersCanWriteIsRefused() throws {
        defer { cleanUp() }
        let open = folder + "/open"
        try Syscall.mkdir(open, mode: 0o755)
        #expect(chmod(open, 0o777) == 0)
        let inOpen = try write("config.json", in: open)
        let said = try #require(refusal(inOpen))
        #expect(said.contains("is in \(open), which other users can write") && said.contains("run: chmod go-w \(open)"), "\(said)")
        // Sticky, as /tmp: no one else may rename or remove the file.
        #expect(chmod(open, 0o1777) == 0)
        #expect(refusal(inOpen) == nil)

        let theirs = folder + "/theirs"
        try Syscall.mkdir(theirs, mode: 0o755)
        #expect(chown(theirs, 65534, 65534) == 0)
        let inTheirs = try write("config.json", in: theirs)
        let owned = try #require(refusal(inTheirs))
        #expect(owned.contains("is in \(theirs), owned by uid 65534"), "\(owned)")
    }

    /// A link is followed (NixOS's /etc): the folder that counts is its target's.
    @Test(.enabled(if: getuid() == 0, "needs root to give a folder to another user"))
    func aLinkIsJudgedByTheFolderOfItsTarget() throws {
        defer { cleanUp() }
        let open = folder + "/open"
        try Syscall.mkdir(open, mode: 0o755)
        #expect(chmod(open, 0o777) == 0)
        let target = try write("config.json", in: open)
        let link = folder + "/config.json"
        #expect(symlink(target, link) == 0)
        let said = try #require(refusal(link))
        #expect(said.contains("is in \(open), which other users can write"), "\(said)")
        #expect(chmod(open, 0o755) == 0)
        #expect(refusal(link) == nil)
    }

    /// Every folder above counts, as sshd's StrictModes: another user's folder, or one others
    /// may write, anywhere up the path can have the config's folder replaced by one holding
    /// a file of theirs. Before, only the config's own folder was looked at.
    @Test(.enabled(if: getuid() == 0, "needs root to give a folder to another user"))
    func aConfigUnderAFolderOthersCanWriteOrOwnIsRefused() throws {
        defer { cleanUp() }
        let open = folder + "/open"
        try Syscall.mkdir(open, mode: 0o755)
        #expect(chmod(open, 0o777) == 0)
        let inner = open + "/etc"
        try Syscall.mkdir(inner, mode: 0o755)
        let config = try write("config.json", in: inner)
        let said = try #require(refusal(config))
        #expect(said.contains("config \(config) is under \(open), which other users can write") && said.contains("run: chmod go-w \(open)"),
                "\(said)")
        #expect(chmod(open, 0o755) == 0)
        #expect(refusal(config) == nil)
        #expect(chown(open, 65534, 65534) == 0)
        let owned = try #require(refusal(config))
        #expect(owned.contains("is under \(open), owned by uid 65534"), "\(owned)")
    }
}
