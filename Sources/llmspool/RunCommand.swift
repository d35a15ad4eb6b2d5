import Foundation
import LLMSpoolCore

/// `llmspool run`: the daemon.
enum RunCommand {
    static let defaultConfigPath = "Config/llmspool.json"

    static func main(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--spool", "--config", "--base-url", "--concurrency", "--log-level", "--log-format"],
                                 switches: ["--help"])
        if args.has("--help") {
            print(Help.run)
            return 0
        }
        guard args.positionals.isEmpty else { throw Arguments.UsageError(description: "unexpected argument \(args.positionals[0])") }
        let environment = ProcessInfo.processInfo.environment
        let config = try loadConfig(args, environment: environment)
        let logger = Logger(minimum: config.logLevel, format: config.logFormat)
        let endpoints = try config.resolvedEndpoints(environment: environment)
        let daemon = try SpoolDaemon(config: config, endpoints: endpoints, logger: logger)
        let signals = Signals(onHangup: {
            // Reread the same sources; a bad file keeps the running configuration.
            do {
                let reloaded = try loadConfig(args, environment: environment)
                daemon.reload(config: reloaded, endpoints: try reloaded.resolvedEndpoints(environment: environment))
            } catch {
                logger.error("configuration not reloaded; keeping the running one", ["reason": "\(error)"])
            }
        })
        try daemon.start()
        for endpoint in endpoints {
            logger.info("endpoint", ["name": endpoint.name, "url": endpoint.baseURL, "api_key": endpoint.apiKey == nil ? "none" : "set",
                                     "concurrency": "\(min(endpoint.concurrency, config.concurrency))"])
        }
        logger.info("llmspool running", ["spool": config.spool, "concurrency": "\(config.concurrency)"])
        let signal = signals.wait()
        logger.info("stopping", ["signal": signal == SIGTERM ? "SIGTERM" : "SIGINT"])
        daemon.stop()
        return 0
    }

    /// Defaults, then the config file, then the environment, then the command line.
    static func loadConfig(_ args: Arguments, environment: [String: String]) throws -> Config {
        var config = Config()
        if let path = args["--config"] {
            config = try Config.load(path: path)
        } else if FileManager.default.fileExists(atPath: defaultConfigPath) {
            config = try Config.load(path: defaultConfigPath)
        }
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
        return config
    }
}
