import Foundation
import LLMSpoolCore

/// Where `run` and `check-config` find their configuration, and how the command line and
/// the environment override it.
enum ConfigSource {
    /// Searched in order when --config is not given.
    static let defaultPaths = ["Config/llmspool.json", "/etc/llmspool/config.json"]

    static let valued: Set<String> = ["--spool", "--config", "--base-url", "--concurrency", "--log-level", "--log-format", "--metrics"]

    /// The config file to read: --config, then $LLMSPOOL_CONFIG, then the first default that exists.
    static func path(_ args: Arguments, environment: [String: String]) -> String? {
        if let path = args["--config"] { return path }
        if let path = environment["LLMSPOOL_CONFIG"], !path.isEmpty { return path }
        return defaultPaths.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Defaults, then the config file, then the environment, then the command line.
    static func load(_ args: Arguments, environment: [String: String]) throws -> Config {
        var config = Config()
        // Read by the daemon (and check-config, which says what it would do): the file's
        // owners are checked too.
        if let path = path(args, environment: environment) { config = try Config.loadTrusted(path: path, base: config) }
        config = config.applyingEnvironment(environment)
        if let spool = args["--spool"] { config.spool = spool }
        if let url = args["--base-url"] {
            // One endpoint, replacing any list the config file has.
            config.baseURL = url
            config.endpoints = []
        }
        config.concurrency = try args.integer("--concurrency", default: config.concurrency, range: 1...1_000_000)
        if let name = args["--log-level"] {
            guard let level = Logger.Level(name: name) else { throw Arguments.UsageError(description: "--log-level must be debug, info, warning or error") }
            config.logLevel = level
        }
        if let name = args["--log-format"] {
            guard let format = Logger.Format(rawValue: name) else { throw Arguments.UsageError(description: "--log-format must be text or json") }
            config.logFormat = format
        }
        if let address = args["--metrics"] {
            do {
                _ = try MetricsServer.parse(address)
            } catch let error as ConfigError {
                throw Arguments.UsageError(description: "--metrics: \(error.message)")
            }
            config.metricsAddress = address
        }
        return config
    }
}
