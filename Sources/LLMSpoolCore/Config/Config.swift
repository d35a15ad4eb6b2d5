import Foundation
import Glibc

/// The daemon's settings, with their defaults. Precedence: command line, then environment
/// (`OPENAI_BASE_URL`), then the config file, then these defaults.
public struct Config: Sendable, Equatable {
    public var spool = "./spool"
    /// Includes `/v1`, as `OPENAI_BASE_URL` does; requests go to `<base_url>/chat/completions`.
    public var baseURL = "https://api.openai.com/v1"
    /// The environment variable that holds the API key. The key itself is never in the file.
    public var apiKeyEnv = "OPENAI_API_KEY"
    /// A file holding the API key, readable by its owner only. Takes precedence over `apiKeyEnv`.
    public var apiKeyFile: String?
    public var concurrency = 64
    public var connectTimeoutSeconds = 10.0
    /// The longest one attempt may take, start to end.
    public var requestTimeoutSeconds = 3600.0
    public var maxRequestBytes = 32 * 1024 * 1024
    /// A safety-net rescan of `outgoing`, in case an inotify event was missed.
    public var rescanIntervalSeconds = 60.0
    /// How long SIGTERM waits for transfers in flight before stopping them.
    public var shutdownGraceSeconds = 10.0
    public var logLevel = Logger.Level.info
    public var logFormat = Logger.Format.text

    public init() {}

    /// Every key the file may hold, with what it means; `check-config` and the docs use it.
    public static let keys: [(key: String, help: String)] = [
        ("spool", "the spool folder (default ./spool)"),
        ("base_url", "the endpoint's base URL including /v1 (default https://api.openai.com/v1; OPENAI_BASE_URL overrides)"),
        ("api_key_env", "name of the environment variable holding the API key (default OPENAI_API_KEY)"),
        ("api_key_file", "path of a file holding the API key, mode 0600 (default none)"),
        ("concurrency", "transfers at once (default 64)"),
        ("connect_timeout_seconds", "connect timeout per attempt (default 10)"),
        ("request_timeout_seconds", "total time one attempt may take (default 3600)"),
        ("max_request_bytes", "largest request file accepted (default 33554432)"),
        ("rescan_interval_seconds", "safety-net rescan of outgoing (default 60)"),
        ("shutdown_grace_seconds", "how long SIGTERM lets transfers finish (default 10)"),
        ("log_level", "debug, info, warning or error (default info)"),
        ("log_format", "text or json (default text)"),
    ]

    /// Reads a JSON config file; unknown keys and wrong types are errors that name the key.
    public static func load(path: String, base: Config = Config()) throws -> Config {
        let bytes: [UInt8]
        do {
            bytes = try FileReader.prefix(path: path, limit: 1 << 20)
        } catch {
            throw ConfigError("cannot read config \(path): \(error)")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            let problem = RequestValidator.jsonProblem(error, bytes)
            throw ConfigError("config \(path) is not valid JSON: \(problem)")
        }
        guard let settings = object as? [String: Any] else {
            throw ConfigError("config \(path) must be a JSON object")
        }
        return try base.merging(settings, source: path)
    }

    public func merging(_ settings: [String: Any], source: String) throws -> Config {
        var config = self
        let known = Set(Config.keys.map(\.key))
        for key in settings.keys.sorted() where !known.contains(key) && !key.hasPrefix("_") {
            throw ConfigError("\(source): unknown setting \"\(key)\" (known: \(Config.keys.map(\.key).joined(separator: ", ")))")
        }
        func string(_ key: String) throws -> String? {
            guard let value = settings[key], !(value is NSNull) else { return nil }
            guard let text = value as? String, !JSONKind.isBool(value) else {
                throw ConfigError("\(source): \"\(key)\" must be a string")
            }
            return text
        }
        func number(_ key: String, minimum: Double) throws -> Double? {
            guard let value = settings[key], !(value is NSNull) else { return nil }
            guard let number = value as? NSNumber, !JSONKind.isBool(value) else {
                throw ConfigError("\(source): \"\(key)\" must be a number")
            }
            guard number.doubleValue >= minimum else {
                throw ConfigError("\(source): \"\(key)\" must be at least \(minimum)")
            }
            return number.doubleValue
        }
        if let value = try string("spool") { config.spool = value }
        if let value = try string("base_url") { config.baseURL = value }
        if let value = try string("api_key_env") { config.apiKeyEnv = value }
        if let value = try string("api_key_file") { config.apiKeyFile = value }
        if let value = try number("concurrency", minimum: 1) { config.concurrency = Int(value) }
        if let value = try number("connect_timeout_seconds", minimum: 0.001) { config.connectTimeoutSeconds = value }
        if let value = try number("request_timeout_seconds", minimum: 0.001) { config.requestTimeoutSeconds = value }
        if let value = try number("max_request_bytes", minimum: 1) { config.maxRequestBytes = Int(value) }
        if let value = try number("rescan_interval_seconds", minimum: 0.1) { config.rescanIntervalSeconds = value }
        if let value = try number("shutdown_grace_seconds", minimum: 0) { config.shutdownGraceSeconds = value }
        if let value = try string("log_level") {
            guard let level = Logger.Level(name: value) else { throw ConfigError("\(source): \"log_level\" must be debug, info, warning or error") }
            config.logLevel = level
        }
        if let value = try string("log_format") {
            guard let format = Logger.Format(rawValue: value) else { throw ConfigError("\(source): \"log_format\" must be text or json") }
            config.logFormat = format
        }
        return config
    }

    /// Applies `OPENAI_BASE_URL` from the environment, as the openai SDKs do.
    public func applyingEnvironment(_ environment: [String: String]) -> Config {
        var config = self
        if let url = environment["OPENAI_BASE_URL"], !url.isEmpty { config.baseURL = url }
        return config
    }

    /// Resolves the endpoint and its key. The key stays in memory only.
    public func endpoint(environment: [String: String]) throws -> Endpoint {
        guard baseURL.hasPrefix("http://") || baseURL.hasPrefix("https://") else {
            throw ConfigError("base_url \"\(baseURL)\" must start with http:// or https://")
        }
        var key: Secret?
        if let apiKeyFile {
            let info: stat
            do { info = try Syscall.lstat(apiKeyFile) } catch { throw ConfigError("cannot read api_key_file: \(error)") }
            if info.st_mode & 0o077 != 0 {
                throw ConfigError("api_key_file \(apiKeyFile) is readable by other users; run: chmod 600 \(apiKeyFile)")
            }
            let bytes: [UInt8]
            do { bytes = try FileReader.prefix(path: apiKeyFile, limit: 64 * 1024) } catch { throw ConfigError("cannot read api_key_file: \(error)") }
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty { throw ConfigError("api_key_file \(apiKeyFile) is empty") }
            key = Secret(text)
        } else if let value = environment[apiKeyEnv], !value.isEmpty {
            key = Secret(value)
        }
        if let value = key?.value, value.contains(where: { $0 == "\n" || $0 == "\r" }) {
            throw ConfigError("the API key contains a line break")
        }
        return Endpoint(baseURL: baseURL, apiKey: key)
    }
}

/// Where requests go and with which key.
public struct Endpoint: Sendable, Equatable {
    public let baseURL: String
    public let apiKey: Secret?

    public init(baseURL: String, apiKey: Secret?) {
        var trimmed = baseURL
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.baseURL = trimmed
        self.apiKey = apiKey
    }

    public var chatCompletionsURL: String { baseURL + "/chat/completions" }
}
