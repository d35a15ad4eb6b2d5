import Foundation
import Glibc
import LLMSpoolCore

/// `llmspool init` and `llmspool check-config`: set a spool up, and say what a
/// configuration amounts to.
enum SetupCommand {
    static func initialize(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["--config", "--group", "--spool"], switches: ["--help", "--force"])
        if args.has("--help") {
            print(Help.initialize)
            return 0
        }
        guard args.positionals.count <= 1 else { throw Arguments.UsageError(description: "give at most one DIR") }
        // Every other command names its spool with --spool: init takes it too, as DIR.
        if let spool = args["--spool"], let positional = args.positionals.first, spool != positional {
            throw Arguments.UsageError(description: "give the spool as DIR or as --spool DIR, not both")
        }
        let group = try args["--group"].map(groupID)
        let directory = args["--spool"] ?? args.positionals.first ?? "./spool"
        let absolute = directory.hasPrefix("/") ? directory : FileManager.default.currentDirectoryPath + "/" + directory
        let layout = SpoolLayout(root: absolute, groupReadable: group != nil)
        try layout.create()
        // Every folder, those in state too: made before state had the group, state/batches
        // stayed the creator's, and a member's `status` could not read a batch's counts.
        for folder in layout.folders {
            var mode = layout.directoryMode
            if let group {
                // As mail spools do: the group drops requests (setgid keeps each file in the
                // group, the sticky bit keeps members from removing each other's files) and
                // reads results in folders whose files inherit the group.
                mode = folder == layout.outgoing ? 0o3770 : 0o2750
                guard chown(folder, uid_t.max, group) == 0 else { throw SystemError(errno: errno, call: "chown", path: folder) }
            }
            guard chmod(folder, mode) == 0 else { throw SystemError(errno: errno, call: "chmod", path: folder) }
        }
        let configPath = args["--config"] ?? layout.root + "/config.json"
        if Syscall.isPresent(configPath) && !args.has("--force") {
            print("spool ready: \(layout.root) (kept the existing \(configPath); --force replaces it)")
            return 0
        }
        // Usually there already (EEXIST); any other failure is named by the write just below.
        try? Syscall.mkdir(DurableFile.directory(of: configPath), mode: 0o755)
        var text = ExampleConfig.text(spool: layout.root)
        if group != nil { text = text.replacingOccurrences(of: "\"group_readable\": false", with: "\"group_readable\": true") }
        try DurableFile.write(Array(text.utf8), to: configPath, mode: 0o600)
        print("spool ready: \(layout.root)")
        print("config written: \(configPath)")
        print("start with: llmspool run --config \(configPath)")
        return 0
    }

    /// A group name or number, as `chgrp` takes it.
    static func groupID(_ name: String) throws -> gid_t {
        if let entry = getgrnam(name) { return entry.pointee.gr_gid }
        if let number = UInt32(name), getgrgid(number) != nil { return number }
        throw Arguments.UsageError(description: "--group: no group \"\(Logger.escape(name))\" (create it with: groupadd \(Logger.escape(name)))")
    }

    static func checkConfig(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ConfigSource.valued, switches: ["--help"])
        if args.has("--help") {
            print(Help.checkConfig)
            return 0
        }
        let environment = ProcessInfo.processInfo.environment
        let source = ConfigSource.path(args, environment: environment) ?? "(none: defaults)"
        let config: Config
        let endpoints: [Endpoint]
        do {
            config = try ConfigSource.load(args, environment: environment)
            endpoints = try config.resolvedEndpoints(environment: environment)
        } catch {
            FileHandle.standardError.write(Data("llmspool: check-config: \(error)\n".utf8))
            return 1
        }
        var lines = ["config: \(source)"]
        lines.append("spool = \(config.spool)")
        for (index, endpoint) in endpoints.enumerated() {
            let key = endpoint.apiKey == nil ? "not set (\(endpoint.apiKeyOrigin))" : "set (from \(endpoint.apiKeyOrigin))"
            var line = "endpoint[\(index)] \(endpoint.name) (\(endpoint.api.rawValue)) = \(endpoint.requestURL)  api key: \(key)  concurrency \(min(endpoint.concurrency, config.concurrency))"
            if endpoint.api == .anthropic { line += "  anthropic-version \(endpoint.anthropicVersion)" }
            if let model = endpoint.model { line += "  model -> \(model)" }
            if endpoint.batch {
                line += endpoint.api == .anthropic ? "  batch: \(endpoint.url(for: MessagesDialect()))/batches" : "  batch: \(endpoint.baseURL)/files + /batches"
            }
            // A limit below one a minute (0.5: one request every two minutes) is shown as is.
            let perMinute = { (value: Double) in value == value.rounded() ? "\(Int(value))" : "\(value)" }
            if endpoint.requestsPerMinute > 0 { line += "  \(perMinute(endpoint.requestsPerMinute)) requests/min" }
            if endpoint.tokensPerMinute > 0 { line += "  \(perMinute(endpoint.tokensPerMinute)) tokens/min" }
            line += "  http \(endpoint.httpVersion.rawValue)"
            if let ca = endpoint.caFile, endpoint.isHTTPS, ca != config.caFile { line += "  ca_file \(ca)" }
            lines.append(line)
        }
        let values: [(String, String)] = [
            ("concurrency", "\(config.concurrency)"), ("connect_timeout_seconds", "\(config.connectTimeoutSeconds)"),
            ("idle_timeout_seconds", "\(config.idleTimeoutSeconds)"), ("request_timeout_seconds", "\(config.requestTimeoutSeconds)"),
            ("max_attempts", "\(config.retry.maxAttempts)"), ("retry_initial_seconds", "\(config.retry.initialBackoffSeconds)"),
            ("retry_max_seconds", "\(config.retry.maxBackoffSeconds)"), ("max_retry_after_seconds", "\(config.retry.maxRetryAfterSeconds)"),
            ("max_lifetime_seconds", "\(config.retry.maxLifetimeSeconds)"), ("cooldown_after_failures", "\(config.cooldownAfterFailures)"),
            ("cooldown_seconds", "\(config.cooldownSeconds)"), ("max_request_bytes", "\(config.maxRequestBytes)"),
            ("max_response_bytes", "\(config.maxResponseBytes)"), ("max_event_bytes", "\(config.maxEventBytes)"),
            ("max_json_depth", "\(config.maxJSONDepth)"),
            ("group_readable", "\(config.groupReadable)"), ("watch_mode", config.watchMode.rawValue),
            ("poll_interval_seconds", "\(config.pollIntervalSeconds)"), ("rescan_interval_seconds", "\(config.rescanIntervalSeconds)"),
            ("settle_seconds", "\(config.settleSeconds)"), ("min_free_bytes", "\(config.minFreeBytes)"),
            ("shutdown_grace_seconds", "\(config.shutdownGraceSeconds)"),
            ("default_completion_window", config.defaultCompletionWindow ?? "none"), ("deferred_fallback", config.deferredFallback.rawValue),
            ("deferred_expired", config.retry.deferredExpired.rawValue),
            ("batch_max_requests", "\(config.batchLimits.maxRequests)"), ("batch_max_bytes", "\(config.batchLimits.maxBytes)"),
            ("batch_linger_seconds", "\(config.batchLimits.lingerSeconds)"), ("batch_poll_seconds", "\(config.batchPollSeconds)"),
            ("batch_poll_max_seconds", "\(config.batchPollMaxSeconds)"), ("batch_deadline_seconds", "\(config.batchDeadlineSeconds)"),
            ("on_complete", config.hooks.onComplete.map { "\($0)" } ?? "none"), ("on_failure", config.hooks.onFailure.map { "\($0)" } ?? "none"),
            ("http_version", config.httpVersion.rawValue), ("ca_file", config.caFile ?? "the system's"), ("ca_directory (SSL_CERT_DIR)", config.caDirectory ?? "the system's"),
            ("metrics", config.metricsAddress ?? "none"), ("log_level", config.logLevel.name), ("log_format", config.logFormat.rawValue),
        ]
        lines += values.map { "\($0.0) = \($0.1)" }
        print(lines.joined(separator: "\n"))
        let warnings = ConfigWarnings.of(endpoints)
        for warning in warnings { FileHandle.standardError.write(Data("llmspool: warning: \(warning)\n".utf8)) }
        print(warnings.isEmpty ? "configuration OK" : "configuration usable, with \(warnings.count) warning\(warnings.count == 1 ? "" : "s") (on stderr)")
        return 0
    }
}
