import Foundation
import LLMSpoolCore

/// `llmspool run`: the daemon.
enum RunCommand {
    static func main(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ConfigSource.valued, switches: ["--help"])
        if args.has("--help") {
            print(Help.run)
            return 0
        }
        guard args.positionals.isEmpty else { throw Arguments.UsageError(description: "unexpected argument \(args.positionals[0])") }
        let environment = ProcessInfo.processInfo.environment
        let config = try ConfigSource.load(args, environment: environment)
        // journald stamps each line itself.
        let logger = Logger(minimum: config.logLevel, format: config.logFormat, timestamps: environment["JOURNAL_STREAM"] == nil)
        let endpoints = try config.resolvedEndpoints(environment: environment)
        let daemon = try SpoolDaemon(config: config, endpoints: endpoints, logger: logger, notifier: SystemdNotifier(environment: environment))
        let signals = Signals(onHangup: {
            // Reread the same sources; a bad file keeps the running configuration.
            do {
                let reloaded = try ConfigSource.load(args, environment: environment)
                daemon.reload(config: reloaded, endpoints: try reloaded.resolvedEndpoints(environment: environment))
            } catch {
                logger.error("configuration not reloaded; keeping the running one", ["reason": "\(error)"])
            }
        })
        let metricsServer = try config.metricsAddress.map { try MetricsServer(address: $0, metrics: daemon.metrics) }
        // Told before the start, which may wait (for space on a full disk): the metrics
        // show that wait.
        if let metricsServer, let address = config.metricsAddress {
            logger.info("serving metrics", ["address": LogValue(address), "port": "\(metricsServer.port)"])
        }
        do {
            try daemon.start(stopping: { signals.stopRequested })
        } catch is SpoolDaemon.StartAbandoned {
            logger.info("stopped before the start ended")
            return 0
        }
        for endpoint in endpoints {
            logger.info("endpoint", ["name": LogValue(endpoint.name), "url": LogValue(endpoint.baseURL), "api_key": endpoint.apiKey == nil ? "none" : "set",
                                     "concurrency": "\(min(endpoint.concurrency, config.concurrency))"])
        }
        for warning in ConfigWarnings.of(endpoints) { logger.warning(warning) }
        logger.info("llmspool running", ["spool": LogValue(config.spool), "concurrency": "\(config.concurrency)"])
        let signal = signals.wait()
        logger.info("stopping", ["signal": signal == SIGTERM ? "SIGTERM" : "SIGINT"])
        daemon.stop()
        metricsServer?.stop()
        return 0
    }
}
