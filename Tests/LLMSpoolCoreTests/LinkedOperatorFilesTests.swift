import Foundation
import Glibc
import Testing
@testable import LLMSpoolCore

/// The operator's own files reached through symbolic links, as deployments give them: a
/// Kubernetes secret volume (`key -> ..data/key`), NixOS's `/etc` (links into the store),
/// Debian's `/etc/ssl/certs/*.pem`. Links are refused inside the spool, never here; the
/// checks look at the file the link leads to.
@Suite struct LinkedOperatorFilesTests {
    let folder = NSTemporaryDirectory() + "llmspool-linked-\(UUID().uuidString)"

    func write(_ text: String, _ name: String, mode: mode_t) throws -> String {
        let path = "\(folder)/data/\(name)"
        try DurableFile.write(Array(text.utf8), to: path, mode: mode, syncDirectory: false)
        #expect(chmod(path, mode) == 0)
        return path
    }

    func link(_ target: String, as name: String) throws -> String {
        let path = "\(folder)/\(name)"
        #expect(symlink(target, path) == 0, "symlink \(path): errno \(errno)")
        return path
    }

    @Test func theConfigTheKeyAndTheCAFileAreReadThroughLinks() throws {
        try FileManager.default.createDirectory(atPath: folder + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let key = try link("data/key", as: "key")
        _ = try write("sk-linked\n", "key", mode: 0o600)
        let ca = try link(try write("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "ca.pem", mode: 0o644), as: "ca.pem")
        let configText = #"{"endpoints": [{"name": "private", "base_url": "https://a.example/v1", "api_key_file": "\#(key)", "ca_file": "\#(ca)"}]}"#
        let config = try Config.load(path: try link(try write(configText, "config.json", mode: 0o644), as: "config.json"))
        let endpoints = try config.resolvedEndpoints(environment: [:])
        #expect(endpoints.count == 1)
        #expect(endpoints.first?.apiKey == Secret("sk-linked"))
        #expect(endpoints.first?.caFile == ca)
    }

    @Test func theChecksLookAtTheFileALinkLeadsTo() throws {
        try FileManager.default.createDirectory(atPath: folder + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let key = try link(try write("sk-open\n", "key", mode: 0o644), as: "key")
        let config = try Config.parse(Array(#"{"endpoints": [{"base_url": "http://127.0.0.1:1/v1", "api_key_file": "\#(key)"}]}"#.utf8), source: "c.json")
        var said = ""
        do { _ = try config.resolvedEndpoints(environment: [:]) } catch { said = "\(error)" }
        #expect(said == "api_key_file \(key) (a link to \(folder)/data/key) is readable by other users; run: chmod 600 \(key)"
            + " (a Kubernetes secret: defaultMode 0400 in its volume)", "\(said)")
        let writable = try link(try write("{}", "open.json", mode: 0o666), as: "open.json")
        said = ""
        do { _ = try Config.load(path: writable) } catch { said = "\(error)" }
        #expect(said.hasPrefix("config \(writable) (a link to \(folder)/data/open.json) is writable by other users"), "\(said)")
    }

    /// The key's own check, alone: a link (mode 0777 itself) to a key only its owner reads
    /// is accepted; a link that leads nowhere says so.
    @Test func aLinkToAPrivateKeyIsTakenAndADanglingOneIsNamed() throws {
        try FileManager.default.createDirectory(atPath: folder + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let key = try link(try write("sk-private\n", "key", mode: 0o600), as: "key")
        let config = try Config.parse(Array(#"{"endpoints": [{"base_url": "http://127.0.0.1:1/v1", "api_key_file": "\#(key)"}]}"#.utf8), source: "c.json")
        #expect(try config.resolvedEndpoints(environment: [:]).first?.apiKey == Secret("sk-private"))
        let dangling = try link(folder + "/data/missing", as: "dangling")
        let broken = try Config.parse(Array(#"{"endpoints": [{"base_url": "http://127.0.0.1:1/v1", "api_key_file": "\#(dangling)"}]}"#.utf8), source: "c.json")
        var said = ""
        do { _ = try broken.resolvedEndpoints(environment: [:]) } catch { said = "\(error)" }
        #expect(said.hasPrefix("cannot read api_key_file: open \(dangling): No such file"), "\(said)")
    }
}
