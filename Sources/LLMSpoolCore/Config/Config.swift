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
    /// An ordered fallback list; when empty, one endpoint is made of the settings above.
    public var endpoints: [EndpointSettings] = []
    public var concurrency = 64
    public var connectTimeoutSeconds = 10.0
    /// How long an attempt may go without content (SSE comments do not count).
    public var idleTimeoutSeconds = 300.0
    /// The longest one attempt may take, start to end.
    public var requestTimeoutSeconds = 3600.0
    public var retry = RetrySettings()
    /// Per endpoint, unless an endpoint sets its own; 0 means no limit.
    public var requestsPerMinute = 0.0
    public var tokensPerMinute = 0.0
    /// After this many retryable failures in a row an endpoint cools down.
    public var cooldownAfterFailures = 3
    public var cooldownSeconds = 30.0
    public var maxRequestBytes = 32 * 1024 * 1024
    public var maxResponseBytes: Int64 = 256 * 1024 * 1024
    /// The longest event a stream may hold unfinished (`max_event_bytes`).
    public var maxEventBytes = 32 * 1024 * 1024
    public var maxJSONDepth = RequestValidator.defaultMaxDepth
    /// Most lines in a batch file (`outgoing/<name>.jsonl`).
    public var maxBatchLines = 1_000_000
    /// Largest batch file.
    public var maxBatchBytes = 2 * 1024 * 1024 * 1024
    /// Results, records and folders readable by the owner's group too (0640 and 0750).
    public var groupReadable = false
    public var watchMode = WatchMode.auto
    public var pollIntervalSeconds = 1.0
    /// A safety-net rescan of `outgoing`, in case an inotify event was missed.
    public var rescanIntervalSeconds = 60.0
    /// A file that is not valid yet is judged only after it has been quiet this long.
    public var settleSeconds = 2.0
    /// Intake pauses while the spool's filesystem has less free space than this.
    public var minFreeBytes: UInt64 = 64 * 1024 * 1024
    /// How long SIGTERM waits for transfers in flight before stopping them.
    public var shutdownGraceSeconds = 10.0
    public var logLevel = Logger.Level.info
    public var logFormat = Logger.Format.text
    public var hooks = HookRunner.Settings()
    /// Claims for daemons sharing the spool; nil: on when the watcher polls.
    public var leases: Bool?
    public var leaseSeconds = 30.0
    /// This daemon's name in leases; the host name by default.
    public var hostID = ProcessInfo.processInfo.hostName
    /// A PEM file of CA certificates for https endpoints (a private CA); the system's when nil.
    public var caFile: String?
    /// A folder of hashed CA certificates (SSL_CERT_DIR); the system's when nil.
    public var caDirectory: String?
    /// Per endpoint, unless an endpoint sets its own.
    public var httpVersion = HTTPVersion.auto
    /// HOST:PORT for /metrics and /healthz; none by default.
    public var metricsAddress: String?
    /// The model of a prompt file whose front matter names none.
    public var defaultModel: String?
    /// The background lane: the window of requests that name none, what happens to a
    /// request that may wait when no endpoint batches, a group's limits and the polling.
    public var defaultCompletionWindow: String?
    public var deferredFallback = LaneRouter.Fallback.live
    public var batchLimits = LaneGrouper.Limits()
    public var batchPollSeconds = 30.0
    public var batchPollMaxSeconds = 600.0
    public var batchDeadlineSeconds = RemoteBatchMachine.defaultDeadlineSeconds

    public init() {}

    public var fileMode: mode_t { groupReadable ? 0o640 : 0o600 }
    public var directoryMode: mode_t { groupReadable ? 0o750 : 0o700 }

    /// What the request formats need from the configuration.
    public var formatContext: FormatContext {
        FormatContext(defaultModel: defaultModel, maxDepth: maxJSONDepth, yaml: LibYAML.reader)
    }

    /// Every key the file may hold, with its default and meaning: `--help`, the README
    /// and the unknown-key error use it.
    public static let keys: [(key: String, help: String)] = [
        ("spool", "the spool folder (default ./spool)"),
        ("base_url", "the endpoint's base URL including /v1 (default https://api.openai.com/v1; OPENAI_BASE_URL overrides)"),
        ("api_key_env", "name of the environment variable holding the API key (default OPENAI_API_KEY)"),
        ("api_key_file", "path of a file holding the API key, mode 0600 (default none)"),
        ("endpoints", "ordered fallback list of endpoints, each with name, base_url, api (openai or anthropic), api_key_env, api_key_file, anthropic_version, model, concurrency, requests_per_minute, tokens_per_minute, batch (true: it serves the background lane through its api's Batch API: OpenAI's Files and Batches, or Anthropic's Message Batches), http_version, ca_file (default: from the settings above and the environment: OPENAI_BASE_URL/OPENAI_API_KEY, and ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY for an Anthropic one)"),
        ("concurrency", "transfers at once (default 64)"),
        ("connect_timeout_seconds", "connect timeout per attempt (default 10)"),
        ("idle_timeout_seconds", "an attempt fails after this long without content (default 300)"),
        ("request_timeout_seconds", "total time one attempt may take (default 3600)"),
        ("max_attempts", "attempts in all, the first included (default 10)"),
        ("retry_initial_seconds", "first backoff (default 0.5)"),
        ("retry_max_seconds", "longest backoff (default 60)"),
        ("max_retry_after_seconds", "longest Retry-After honoured; longer fails the request (default 3600)"),
        ("max_lifetime_seconds", "no attempt starts later than this after the request was seen (default 86400)"),
        ("requests_per_minute", "per endpoint, 0 for no limit (default 0)"),
        ("tokens_per_minute", "per endpoint, estimated, 0 for no limit (default 0)"),
        ("cooldown_after_failures", "retryable failures in a row that make an endpoint cool down (default 3)"),
        ("cooldown_seconds", "how long it cools down (default 30)"),
        ("max_request_bytes", "largest request file accepted (default 33554432)"),
        ("max_response_bytes", "largest answer accepted; a larger one fails the request (default 268435456)"),
        ("max_event_bytes", "longest event of a stream held before its end; a longer one fails the request (default 33554432)"),
        ("max_json_depth", "deepest nesting of a request (default 64, at most 128)"),
        ("max_batch_lines", "most lines in a batch file, outgoing/<name>.jsonl (default 1000000)"),
        ("max_batch_bytes", "largest batch file (default 2147483648)"),
        ("default_model", "the model of a prompt file (.md, .txt) that names none (default none: such a file fails)"),
        ("default_completion_window", "the completion_window of a request that names none: \"24h\" sends it through the background lane (default none)"),
        ("deferred_fallback", "a request that may wait when no endpoint has \"batch\": true: live or fail (default live)"),
        ("deferred_expired", "a request whose remote batch expired before it ran: live (sent at once through the live lane) or fail (fails as expired) (default live)"),
        ("batch_max_requests", "most requests in one remote batch (default 50000)"),
        ("batch_max_bytes", "largest input file of one remote batch (default 209715200)"),
        ("batch_linger_seconds", "a group is sent when its oldest request has waited this long (default 60)"),
        ("batch_poll_seconds", "first wait between polls of a remote batch, doubling while nothing changes (default 30)"),
        ("batch_poll_max_seconds", "longest wait between polls (default 600)"),
        ("batch_deadline_seconds", "a remote batch a poll finds still running this long after its group was made is cancelled, and its requests end as a cancelled batch's do; reconciling is given up after this long, never less than 26 h (default 93600: the providers' 24 h window and 2 h to finalize)"),
        ("group_readable", "results, records and folders readable by the group too (default false)"),
        ("watch_mode", "auto, inotify or poll (default auto: poll on network and FUSE filesystems)"),
        ("poll_interval_seconds", "how often polling scans outgoing (default 1)"),
        ("rescan_interval_seconds", "safety-net rescan of outgoing (default 60)"),
        ("settle_seconds", "a file not yet valid is judged after this long without change (default 2)"),
        ("min_free_bytes", "intake pauses below this much free space (default 67108864)"),
        ("shutdown_grace_seconds", "how long SIGTERM lets transfers finish (default 10)"),
        ("on_complete", "command run when a request succeeds: an argument array, or a string for /bin/sh -c (default none)"),
        ("on_failure", "command run when a request fails, likewise (default none)"),
        ("hook_concurrency", "hooks running at once (default 4)"),
        ("hook_timeout_seconds", "a hook is killed after this long (default 60)"),
        ("leases", "claim each request before sending it, for several daemons on one spool (default: on when polling)"),
        ("lease_seconds", "a claim not renewed for this long is taken over (default 30)"),
        ("host_id", "this daemon's name in claims (default: the host name)"),
        ("ca_file", "a PEM file of CA certificates for https endpoints, for a private CA (default: CURL_CA_BUNDLE, else SSL_CERT_FILE, else the system's; SSL_CERT_DIR names a folder)"),
        ("http_version", "auto, 1.1 or 2, per endpoint unless it sets its own (default auto: HTTP/2 over TLS when the server offers it by ALPN, many requests on one connection; HTTP/1.1 otherwise; 2 over plain http is h2c with prior knowledge)"),
        ("metrics", "HOST:PORT serving Prometheus /metrics and /healthz (default none)"),
        ("log_level", "debug, info, warning or error (default info)"),
        ("log_format", "text or json (default text)"),
    ]

    /// Reads a JSON config file; unknown keys and wrong types are errors that name the key.
    /// A file other users can write is refused: it decides where the API key is sent.
    public static func load(path: String, base: Config = Config()) throws -> Config {
        try load(path: path, base: base, trustedOwners: false)
    }

    /// The same, for the daemon, which sends the API key where the file says: the file must
    /// also be the user's it runs as, or root's, and its folder and every folder above it
    /// must be writable by no other user (unless sticky, as /tmp is, or on a read-only
    /// mount), as ssh asks of its own files. A config of another
    /// user's (mode 0644, owned by alice) is one alice can point at her own server.
    public static func loadTrusted(path: String, base: Config) throws -> Config {
        try load(path: path, base: base, trustedOwners: true)
    }

    private static func load(path: String, base: Config, trustedOwners: Bool) throws -> Config {
        // A link is followed (NixOS's /etc is links into its store); the file it leads to is
        // checked and read through one descriptor, so that what is checked is what is read.
        let bytes: [UInt8]
        do {
            let file = try FileReader.openRegular(path, followingLinks: true)
            let info = try file.fstat()
            if info.st_mode & 0o022 != 0 {
                throw ConfigError("config \(path)\(linkNote(path)) is writable by other users, and it decides where the API key is sent; run: chmod go-w \(path)")
            }
            if trustedOwners { try checkOwners(path: path, file: info) }
            bytes = try FileReader.prefix(fd: file.rawValue, path: path, limit: 1 << 20)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError("cannot read config \(path): \(error)")
        }
        return try parse(bytes, source: path, base: base)
    }

    /// Parses a config file's bytes; `source` names it in errors.
    public static func parse(_ bytes: [UInt8], source: String, base: Config = Config()) throws -> Config {
        // The strict reader first: it refuses what the standard refuses (a trailing comma,
        // which Foundation lets through) and says where, as a line and a column.
        do {
            _ = try RawJSON.parse(bytes)
        } catch {
            let (line, column) = RequestValidator.position(ofByte: min(error.offset, bytes.count), in: bytes)
            // YAML is what most daemons' configs are: said, or the operator hunts for a typo.
            let lowered = source.lowercased()
            let yaml = lowered.hasSuffix(".yaml") || lowered.hasSuffix(".yml") ? " (the configuration is JSON; YAML is not read)" : ""
            throw ConfigError("config \(source) is not valid JSON: line \(line), column \(column): \(error.reason)\(yaml)")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            let problem = JSONProblem.problem(error, bytes)
            throw ConfigError("config \(source) is not valid JSON: \(problem)")
        }
        guard let settings = object as? [String: Any] else {
            throw ConfigError("config \(source) must be a JSON object")
        }
        return try base.merging(settings, source: source)
    }

    public func merging(_ settings: [String: Any], source: String) throws -> Config {
        var config = self
        let reader = SettingsReader(settings: settings, source: source, known: Config.keys.map(\.key))
        try reader.checkKeys()
        if let value = try reader.string("spool") { config.spool = value }
        if let value = try reader.string("base_url") { config.baseURL = value }
        if let value = try reader.string("api_key_env") { config.apiKeyEnv = value }
        if let value = try reader.string("api_key_file") { config.apiKeyFile = value }
        if let list = settings["endpoints"] {
            guard let items = list as? [Any] else { throw ConfigError("\(source): \"endpoints\" must be an array of objects") }
            config.endpoints = try items.enumerated().map { index, item in
                guard let object = item as? [String: Any] else {
                    throw ConfigError("\(source): endpoints[\(index)] must be an object")
                }
                return try EndpointSettings(object, source: "\(source): endpoints[\(index)]", index: index)
            }
        }
        if let value = try reader.integer("concurrency", minimum: 1, maximum: 1_000_000) { config.concurrency = value }
        if let value = try reader.number("connect_timeout_seconds", minimum: 0.001) { config.connectTimeoutSeconds = value }
        if let value = try reader.number("idle_timeout_seconds", minimum: 0.001) { config.idleTimeoutSeconds = value }
        if let value = try reader.number("request_timeout_seconds", minimum: 0.001) { config.requestTimeoutSeconds = value }
        if let value = try reader.integer("max_attempts", minimum: 1, maximum: 1_000_000) { config.retry.maxAttempts = value }
        if let value = try reader.number("retry_initial_seconds", minimum: 0) { config.retry.initialBackoffSeconds = value }
        if let value = try reader.number("retry_max_seconds", minimum: 0) { config.retry.maxBackoffSeconds = value }
        if let value = try reader.number("max_retry_after_seconds", minimum: 0) { config.retry.maxRetryAfterSeconds = value }
        if let value = try reader.number("max_lifetime_seconds", minimum: 0) { config.retry.maxLifetimeSeconds = value }
        if let value = try reader.number("requests_per_minute", minimum: 0) { config.requestsPerMinute = value }
        if let value = try reader.number("tokens_per_minute", minimum: 0) { config.tokensPerMinute = value }
        if let value = try reader.integer("cooldown_after_failures", minimum: 1, maximum: 1_000_000) { config.cooldownAfterFailures = value }
        if let value = try reader.number("cooldown_seconds", minimum: 0) { config.cooldownSeconds = value }
        if let value = try reader.integer("max_request_bytes", minimum: 1, maximum: 1 << 40) { config.maxRequestBytes = value }
        if let value = try reader.integer("max_batch_lines", minimum: 1, maximum: 1 << 31) { config.maxBatchLines = value }
        if let value = try reader.integer("max_batch_bytes", minimum: 1, maximum: 1 << 46) { config.maxBatchBytes = value }
        if let value = try reader.integer("max_response_bytes", minimum: 1, maximum: 1 << 50) { config.maxResponseBytes = Int64(value) }
        if let value = try reader.integer("max_event_bytes", minimum: 64 * 1024, maximum: 1 << 40) { config.maxEventBytes = value }
        // No deeper than the JSON reader goes: a setting above it was accepted and then not
        // applied, deeper requests failing as invalid JSON instead of too-deep.
        if let value = try reader.integer("max_json_depth", minimum: 2, maximum: RawJSON.maximumDepth) { config.maxJSONDepth = value }
        if let value = try reader.string("default_completion_window") {
            guard value == LaneRouter.deferredWindow else {
                throw ConfigError("\(source): \"default_completion_window\" must be \"\(LaneRouter.deferredWindow)\" (the only window the providers offer), not \"\(Logger.escape(value))\"")
            }
            config.defaultCompletionWindow = value
        }
        if let value = try reader.string("deferred_fallback") {
            guard let fallback = LaneRouter.Fallback(rawValue: value) else {
                throw ConfigError("\(source): \"deferred_fallback\" must be live or fail, not \"\(Logger.escape(value))\"")
            }
            config.deferredFallback = fallback
        }
        if let value = try reader.string("deferred_expired") {
            guard let expiry = DeferredExpiry(rawValue: value) else {
                throw ConfigError("\(source): \"deferred_expired\" must be live or fail, not \"\(Logger.escape(value))\"")
            }
            config.retry.deferredExpired = expiry
        }
        var limits = config.batchLimits
        if let value = try reader.integer("batch_max_requests", minimum: 1, maximum: 50_000) { limits.maxRequests = value }
        if let value = try reader.integer("batch_max_bytes", minimum: 1024, maximum: 200 * 1024 * 1024) { limits.maxBytes = value }
        if let value = try reader.number("batch_linger_seconds", minimum: 0, maximum: 86_400) { limits.lingerSeconds = value }
        config.batchLimits = LaneGrouper.Limits(maxRequests: limits.maxRequests, maxBytes: limits.maxBytes, lingerSeconds: limits.lingerSeconds)
        if let value = try reader.number("batch_poll_seconds", minimum: 1, maximum: 86_400) { config.batchPollSeconds = value }
        if let value = try reader.number("batch_poll_max_seconds", minimum: 1, maximum: 86_400) { config.batchPollMaxSeconds = value }
        if let value = try reader.number("batch_deadline_seconds", minimum: 1, maximum: 2_592_000) { config.batchDeadlineSeconds = value }
        if config.batchPollMaxSeconds < config.batchPollSeconds {
            throw ConfigError("\(source): \"batch_poll_max_seconds\" (\(SettingsReader.format(config.batchPollMaxSeconds))) must not be less than \"batch_poll_seconds\" (\(SettingsReader.format(config.batchPollSeconds)))")
        }
        if let value = try reader.bool("group_readable") { config.groupReadable = value }
        if let value = try reader.number("rescan_interval_seconds", minimum: 0.1) { config.rescanIntervalSeconds = value }
        if let value = try reader.number("poll_interval_seconds", minimum: 0.05) { config.pollIntervalSeconds = value }
        if let value = try reader.number("settle_seconds", minimum: 0) { config.settleSeconds = value }
        if let value = try reader.integer("min_free_bytes", minimum: 0, maximum: 1 << 60) { config.minFreeBytes = UInt64(value) }
        if let value = try reader.string("watch_mode") {
            guard let mode = WatchMode(rawValue: value) else { throw ConfigError("\(source): \"watch_mode\" must be auto, inotify or poll") }
            config.watchMode = mode
        }
        if let value = try reader.number("shutdown_grace_seconds", minimum: 0) { config.shutdownGraceSeconds = value }
        if let value = try reader.hook("on_complete") { config.hooks.onComplete = value }
        if let value = try reader.hook("on_failure") { config.hooks.onFailure = value }
        if let value = try reader.integer("hook_concurrency", minimum: 1, maximum: 1_000) { config.hooks.concurrency = value }
        if let value = try reader.number("hook_timeout_seconds", minimum: 0.001) { config.hooks.timeoutSeconds = value }
        if let value = try reader.string("metrics") {
            // Checked here as `run` would bind it: check-config must not say OK to what run refuses.
            do {
                _ = try MetricsServer.parse(value)
            } catch let error as ConfigError {
                throw ConfigError("\(source): \"metrics\": \(error.message)")
            }
            config.metricsAddress = value
        }
        if let value = try reader.string("default_model") {
            guard !value.isEmpty else { throw ConfigError("\(source): \"default_model\" must be a model's name, not empty") }
            config.defaultModel = value
        }
        if let value = try reader.string("ca_file") { config.caFile = try SettingsReader.caFile(value, source: source) }
        if let value = try reader.httpVersion("http_version") { config.httpVersion = value }
        if let value = try reader.bool("leases") { config.leases = value }
        if let value = try reader.number("lease_seconds", minimum: 1) { config.leaseSeconds = value }
        if let value = try reader.string("host_id") {
            guard !value.isEmpty, !value.contains(":") else { throw ConfigError("\(source): \"host_id\" must be a non-empty name without a colon") }
            config.hostID = value
        }
        if let value = try reader.string("log_level") {
            guard let level = Logger.Level(name: value) else { throw ConfigError("\(source): \"log_level\" must be debug, info, warning or error") }
            config.logLevel = level
        }
        if let value = try reader.string("log_format") {
            guard let format = Logger.Format(rawValue: value) else { throw ConfigError("\(source): \"log_format\" must be text or json") }
            config.logFormat = format
        }
        return config
    }

    /// Applies `OPENAI_BASE_URL` from the environment, as the openai SDKs do.
    public func applyingEnvironment(_ environment: [String: String]) -> Config {
        var config = self
        if let url = environment["OPENAI_BASE_URL"], !url.isEmpty { config.baseURL = url }
        // libcurl reads none of these itself; curl(1) and OpenSSL's tools do, so users expect
        // them. Unlike other settings, the file's ca_file wins: these variables are often set
        // machine-wide to the system's bundle, which would hide the private CA asked for.
        let nonEmpty = { (name: String) in environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if config.caFile == nil, let file = nonEmpty("CURL_CA_BUNDLE") ?? nonEmpty("SSL_CERT_FILE") { config.caFile = file }
        if config.caDirectory == nil, let folder = nonEmpty("SSL_CERT_DIR") { config.caDirectory = folder }
        return config
    }

    /// The fallback list, in order, with keys read. Keys stay in memory only.
    /// Without an `endpoints` list, the environment defines them as the official SDKs read it:
    /// the OpenAI one from the settings above (with `OPENAI_BASE_URL`), and an Anthropic one
    /// when `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is set. The OpenAI one is left out
    /// when only Anthropic's variables say anything: its requests then fail as `no-endpoint`
    /// instead of going to api.openai.com without a key.
    public func resolvedEndpoints(environment: [String: String]) throws -> [Endpoint] {
        try environmentEndpoints(environment).map { settings in
            try settings.resolve(environment: environment, defaults: self)
        }
    }

    /// The configured list, or the one the environment defines.
    public func environmentEndpoints(_ environment: [String: String]) -> [EndpointSettings] {
        guard endpoints.isEmpty else { return endpoints }
        let set = { (name: String) in !(environment[name] ?? "").isEmpty }
        let openai = EndpointSettings(name: "default", baseURL: baseURL, apiKeyEnv: apiKeyEnv, apiKeyFile: apiKeyFile)
        guard set(Config.anthropicKeyVariable) || set(Config.anthropicBaseURLVariable) else { return [openai] }
        let anthropic = EndpointSettings(name: "anthropic", baseURL: environment[Config.anthropicBaseURLVariable].flatMap { $0.isEmpty ? nil : $0 } ?? Config.anthropicBaseURL,
                                         apiKeyEnv: Config.anthropicKeyVariable, api: .anthropic)
        let openaiNamed = baseURL != Config().baseURL || apiKeyFile != nil || set(apiKeyEnv)
        return openaiNamed ? [openai, anthropic] : [anthropic]
    }

    /// The Anthropic SDK's default base URL (it has no `/v1`).
    public static let anthropicBaseURL = "https://api.anthropic.com"
    public static let anthropicKeyVariable = "ANTHROPIC_API_KEY"
    public static let anthropicBaseURLVariable = "ANTHROPIC_BASE_URL"
}

/// One endpoint of the fallback list, as configured.
public struct EndpointSettings: Sendable, Equatable {
    public var name: String
    public var baseURL: String
    public var apiKeyEnv: String
    public var apiKeyFile: String?
    /// Replaces the request's `model` when sent here.
    public var model: String?
    public var concurrency: Int?
    public var requestsPerMinute: Double?
    public var tokensPerMinute: Double?
    /// The protocol family it speaks, which decides the dialects it takes.
    public var api: EndpointAPI
    /// The `anthropic-version` header an Anthropic endpoint sends; nil: `MessagesDialect.defaultVersion`.
    public var anthropicVersion: String?
    /// `"batch": true`: it serves the background lane through its Batch API.
    public var batch = false

    /// nil: the top-level `http_version`.
    public var httpVersion: HTTPVersion?
    /// nil: the top-level `ca_file` (or the environment's).
    public var caFile: String?

    public static let keys = ["name", "base_url", "api", "api_key_env", "api_key_file", "anthropic_version", "model", "concurrency",
                              "requests_per_minute", "tokens_per_minute", "batch", "http_version", "ca_file"]

    public init(name: String, baseURL: String, apiKeyEnv: String = "OPENAI_API_KEY", apiKeyFile: String? = nil, model: String? = nil,
                concurrency: Int? = nil, requestsPerMinute: Double? = nil, tokensPerMinute: Double? = nil,
                api: EndpointAPI = .openai, anthropicVersion: String? = nil) {
        self.api = api
        self.anthropicVersion = anthropicVersion
        self.name = name
        self.baseURL = baseURL
        self.apiKeyEnv = apiKeyEnv
        self.apiKeyFile = apiKeyFile
        self.model = model
        self.concurrency = concurrency
        self.requestsPerMinute = requestsPerMinute
        self.tokensPerMinute = tokensPerMinute
    }

    init(_ object: [String: Any], source: String, index: Int) throws {
        let reader = SettingsReader(settings: object, source: source, known: EndpointSettings.keys)
        try reader.checkKeys()
        guard let url = try reader.string("base_url") else { throw ConfigError("\(source): \"base_url\" is required") }
        var api = EndpointAPI.openai
        if let name = try reader.string("api") {
            guard let named = EndpointAPI(rawValue: name) else {
                throw ConfigError("\(source): \"api\" must be \(EndpointAPI.allCases.map(\.rawValue).joined(separator: " or ")), not \"\(Logger.escape(name))\"")
            }
            api = named
        }
        let version = try reader.string("anthropic_version")
        if let version {
            guard api == .anthropic else {
                throw ConfigError("\(source): \"anthropic_version\" is only for an endpoint whose \"api\" is \"anthropic\"")
            }
            // It becomes a header line: nothing that could end the line or hide in it.
            guard !version.isEmpty, version.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
                throw ConfigError("\(source): \"anthropic_version\" must be a non-empty printable ASCII word, such as \"\(MessagesDialect.defaultVersion)\"")
            }
        }
        self.init(name: try reader.string("name") ?? "endpoint\(index)", baseURL: url,
                  apiKeyEnv: try reader.string("api_key_env") ?? (api == .anthropic ? Config.anthropicKeyVariable : "OPENAI_API_KEY"),
                  apiKeyFile: try reader.string("api_key_file"), model: try reader.string("model"),
                  concurrency: try reader.integer("concurrency", minimum: 1, maximum: 1_000_000),
                  requestsPerMinute: try reader.number("requests_per_minute", minimum: 0),
                  tokensPerMinute: try reader.number("tokens_per_minute", minimum: 0),
                  api: api, anthropicVersion: version)
        if let batch = try reader.bool("batch"), batch {
            guard model == nil else {
                throw ConfigError("\(source): \"batch\": true cannot go with \"model\": the background lane sends each request's body as it is")
            }
            self.batch = true
        }
        httpVersion = try reader.httpVersion("http_version")
        caFile = try reader.string("ca_file").map { try SettingsReader.caFile($0, source: source) }
    }

    func resolve(environment: [String: String], defaults: Config) throws -> Endpoint {
        if let problem = BaseURLRule.problem(baseURL) {
            throw ConfigError("endpoint \(name): base_url \"\(Logger.escape(BaseURLRule.shown(baseURL)))\" \(problem)")
        }
        var key: Secret?
        var keyOrigin = "$\(apiKeyEnv)"
        if let apiKeyFile {
            key = try EndpointSettings.readKeyFile(apiKeyFile)
            keyOrigin = "file \(apiKeyFile)"
        } else if let value = environment[apiKeyEnv], !value.isEmpty {
            key = Secret(value)
        }
        if let value = key?.value, value.contains(where: { $0 == "\n" || $0 == "\r" }) {
            throw ConfigError("endpoint \(name): the API key contains a line break")
        }
        let ca = caFile ?? defaults.caFile
        if let ca, baseURL.lowercased().hasPrefix("https://") {
            // Checked here rather than left to libcurl, which would fail every request
            // (curl code 77) with no word of which setting named the file.
            let origin = caFile != nil ? "its ca_file" : "ca_file (or CURL_CA_BUNDLE / SSL_CERT_FILE)"
            if let problem = SettingsReader.caFileProblem(ca) {
                throw ConfigError("endpoint \(name): \(origin) \(ca) \(problem)")
            }
        }
        return Endpoint(name: name, baseURL: baseURL, apiKey: key, model: model,
                        concurrency: concurrency ?? defaults.concurrency,
                        requestsPerMinute: requestsPerMinute ?? defaults.requestsPerMinute,
                        tokensPerMinute: tokensPerMinute ?? defaults.tokensPerMinute,
                        api: api, anthropicVersion: anthropicVersion ?? MessagesDialect.defaultVersion, apiKeyOrigin: keyOrigin,
                        batch: batch, httpVersion: httpVersion ?? defaults.httpVersion, caFile: ca)
    }

    static func readKeyFile(_ path: String) throws -> Secret {
        // A Kubernetes secret is a link (`key -> ..data/key`); the file it leads to is checked
        // and read through one descriptor, so that what is checked is what is read.
        let bytes: [UInt8]
        do {
            let file = try FileReader.openRegular(path, followingLinks: true)
            if try file.fstat().st_mode & 0o077 != 0 {
                // A secret volume is read-only: its mode is set where it is mounted.
                throw ConfigError("api_key_file \(path)\(linkNote(path)) is readable by other users; run: chmod 600 \(path)"
                    + " (a Kubernetes secret: defaultMode 0400 in its volume)")
            }
            bytes = try FileReader.prefix(fd: file.rawValue, path: path, limit: 64 * 1024)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError("cannot read api_key_file: \(error)")
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { throw ConfigError("api_key_file \(path) is empty") }
        return Secret(text)
    }
}

extension Config {
    /// `Config.loadTrusted`'s rules for the file (`file`: its `fstat`) and its folder.
    static func checkOwners(path: String, file: stat) throws {
        let me = geteuid()
        guard file.st_uid == 0 || file.st_uid == me else {
            throw ConfigError("config \(path)\(linkNote(path)) is owned by \(UserDescription.of(file.st_uid)), neither root nor the user the daemon runs as "
                              + "(\(UserDescription.of(me))), and it decides where the API key is sent; run: chown \(me) \(path)")
        }
        // The folders of the file itself, a link's target's, up to the root, as sshd's
        // StrictModes: whoever may write in any of them may put another file, or another
        // folder holding one, in its place.
        let real = try Syscall.realPath(path)
        var folder = DurableFile.directory(of: real)
        while true {
            let info = try Syscall.statFollowingLinks(folder)
            let which = folder == DurableFile.directory(of: real) ? "is in \(folder)" : "is under \(folder)"
            // A read-only mount's folders are written by no one: a Kubernetes ConfigMap's volume
            // is mode 0777 and read-only.
            let writableByOthers = info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0
            guard try !writableByOthers || Syscall.isReadOnlyMount(folder) else {
                throw ConfigError("config \(path) \(which), which other users can write (they could put another file in its place), "
                                  + "and it decides where the API key is sent; run: chmod go-w \(folder)")
            }
            guard info.st_uid == 0 || info.st_uid == me else {
                throw ConfigError("config \(path) \(which), owned by \(UserDescription.of(info.st_uid)), neither root nor the user the daemon runs as "
                                  + "(\(UserDescription.of(me))): its owner could put another file in its place, and the file decides where the API key is sent")
            }
            let parent = DurableFile.directory(of: folder)
            guard folder != "/", parent != folder else { return }
            folder = parent
        }
    }
}

/// " (a link to <target>)" when `path` is a symbolic link, for messages about the file it
/// leads to: the link itself shows as readable by everyone.
func linkNote(_ path: String) -> String {
    guard let info = try? Syscall.lstat(path), info.st_mode & S_IFMT == S_IFLNK else { return "" }
    // The note only explains; a link that cannot be read is named without it.
    guard let target = try? Syscall.readLink(path) else { return "" }
    return " (a link to \(target))"
}

/// Where requests go, with which key, under which limits.
public struct Endpoint: Sendable, Equatable {
    public let name: String
    public let baseURL: String
    public let apiKey: Secret?
    public let model: String?
    public let concurrency: Int
    public let requestsPerMinute: Double
    public let tokensPerMinute: Double
    public let api: EndpointAPI
    /// The `anthropic-version` header of an Anthropic endpoint.
    public let anthropicVersion: String
    /// Where its key comes from, for `check-config`: `$VARIABLE` or `file PATH`.
    public let apiKeyOrigin: String
    /// It serves the background lane through its Batch API.
    public let batch: Bool

    public let httpVersion: HTTPVersion
    /// The PEM file its TLS server's certificate is checked against; nil: the system's.
    public let caFile: String?

    public init(name: String = "default", baseURL: String, apiKey: Secret?, model: String? = nil, concurrency: Int = 64,
                requestsPerMinute: Double = 0, tokensPerMinute: Double = 0, api: EndpointAPI = .openai,
                anthropicVersion: String = MessagesDialect.defaultVersion, apiKeyOrigin: String = "$OPENAI_API_KEY", batch: Bool = false,
                httpVersion: HTTPVersion = .auto, caFile: String? = nil) {
        self.batch = batch
        let trimmed = Endpoint.normalisedBaseURL(baseURL, api: api)
        self.httpVersion = httpVersion
        self.caFile = caFile
        self.api = api
        self.anthropicVersion = anthropicVersion
        self.apiKeyOrigin = apiKeyOrigin
        self.name = name
        self.baseURL = trimmed
        self.apiKey = apiKey
        self.model = model
        self.concurrency = concurrency
        self.requestsPerMinute = requestsPerMinute
        self.tokensPerMinute = tokensPerMinute
    }

    public var chatCompletionsURL: String { url(for: ChatCompletionsDialect()) }

    /// Where this endpoint's own kind of request goes (what `check-config` shows).
    public var requestURL: String {
        api == .anthropic ? url(for: MessagesDialect()) : chatCompletionsURL
    }

    /// A base URL without trailing slashes; an Anthropic one also without a trailing `/v1`,
    /// which the Messages path carries (the Anthropic SDK's base has none, but a base copied
    /// from an OpenAI-style setting often does).
    public static func normalisedBaseURL(_ url: String, api: EndpointAPI) -> String {
        var trimmed = url
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        if api == .anthropic, trimmed.hasSuffix("/v1") {
            trimmed.removeLast(3)
            while trimmed.hasSuffix("/") { trimmed.removeLast() }
        }
        return trimmed
    }

    /// Where requests of a dialect go on this endpoint.
    public func url(for dialect: any Dialect) -> String { baseURL + dialect.path }

    public var isHTTPS: Bool { baseURL.lowercased().hasPrefix("https://") }
}

/// Typed reads from a JSON settings object, with errors that name the source and key.
struct SettingsReader {
    let settings: [String: Any]
    let source: String
    let known: [String]

    func checkKeys() throws {
        let knownSet = Set(known)
        for key in settings.keys.sorted() where !knownSet.contains(key) && !key.hasPrefix("_") {
            if key == "api_key" {
                throw ConfigError("\(source): \"api_key\": keys are never accepted inline; use api_key_env (a variable's name) or api_key_file")
            }
            let meant = NearestName.suggestion(for: key, among: known).map { "did you mean \"\($0)\"? " } ?? ""
            throw ConfigError("\(source): unknown setting \"\(key)\" (\(meant)known: \(known.joined(separator: ", ")))")
        }
    }

    func string(_ key: String) throws -> String? {
        guard let value = settings[key], !(value is NSNull) else { return nil }
        guard let text = value as? String, !JSONKind.isBool(value) else {
            throw ConfigError("\(source): \"\(key)\" must be a string")
        }
        try refuseNUL(in: [text], key)
        return text
    }

    func httpVersion(_ key: String) throws -> HTTPVersion? {
        guard let value = settings[key], !(value is NSNull) else { return nil }
        // A bare number (2, 1.1) is what people type; it is refused with the spelling that works.
        guard let text = value as? String, !JSONKind.isBool(value), let version = HTTPVersion(setting: text) else {
            let shown = JSONKind.isBool(value) ? "\((value as? Bool) == true)" : (value as? String).map { "\"\(Logger.escape($0))\"" } ?? "\(value)"
            throw ConfigError("\(source): \"\(key)\" must be one of the strings \(HTTPVersion.settingValues) (\"auto\" by default), not \(shown)")
        }
        return version
    }

    /// A CA file must name something: an empty path would make libcurl trust nothing and
    /// report every server's certificate as unknown, far from the cause.
    /// What keeps `path` from being a CA file libcurl can load, or nil: it must be a
    /// regular file holding at least one PEM certificate (a folder, an empty file, a key or
    /// garbage opened fine and then failed every request with curl code 77).
    static func caFileProblem(_ path: String) -> String? {
        let bytes: [UInt8]
        do {
            let file = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
            guard try file.fstat().st_mode & S_IFMT == S_IFREG else { return "is not a regular file" }
            // The file opened (a link followed, as libcurl follows it: /etc/ssl/certs is links).
            bytes = try FileReader.prefix(fd: file.rawValue, path: path, limit: 64 << 20)
        } catch {
            return "cannot be read: \(error)"
        }
        let marker = Array("-----BEGIN CERTIFICATE-----".utf8)
        guard bytes.count >= marker.count, (0...(bytes.count - marker.count)).contains(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }) else {
            return "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        }
        return nil
    }

    static func caFile(_ path: String, source: String) throws -> String {
        guard !path.isEmpty, !path.contains("\u{0}") else { throw ConfigError("\(source): \"ca_file\" must be the path of a PEM file, not empty") }
        return path
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = settings[key], !(value is NSNull) else { return nil }
        guard JSONKind.isBool(value), let flag = value as? Bool else { throw ConfigError("\(source): \"\(key)\" must be true or false") }
        return flag
    }

    /// Every string setting reaches a C call (a path, an address, a command) that would stop
    /// at a NUL: the spool "/a\u0000b" became "/a" there, a hook ran cut short.
    func refuseNUL(in texts: [String], _ key: String) throws {
        guard !texts.contains(where: { $0.utf8.contains(0) }) else {
            throw ConfigError("\(source): \"\(key)\" must not contain a NUL character (\\u0000)")
        }
    }

    func hook(_ key: String) throws -> HookCommand? {
        guard let value = settings[key], !(value is NSNull) else { return nil }
        if let line = value as? String, !JSONKind.isBool(value) {
            guard !line.isEmpty else { throw ConfigError("\(source): \"\(key)\" is empty") }
            try refuseNUL(in: [line], key)
            return .shell(line)
        }
        if let list = value as? [Any], !list.isEmpty, list.allSatisfy({ $0 is String }) {
            let words = list.compactMap { $0 as? String }
            try refuseNUL(in: words, key)
            return .argv(words)
        }
        throw ConfigError("\(source): \"\(key)\" must be a non-empty array of strings (run as is) or a string (run by /bin/sh -c)")
    }

    /// A number within [minimum, maximum]; the default maximum (about 31 years in seconds)
    /// keeps every later conversion to milliseconds or microseconds in range.
    func number(_ key: String, minimum: Double, maximum: Double = 1e9) throws -> Double? {
        guard let value = settings[key], !(value is NSNull) else { return nil }
        guard let number = value as? NSNumber, !JSONKind.isBool(value), !(value is String) else {
            throw ConfigError("\(source): \"\(key)\" must be a number")
        }
        let double = number.doubleValue
        guard double.isFinite, double >= minimum, double <= maximum else {
            throw ConfigError("\(source): \"\(key)\" must be from \(Self.format(minimum)) to \(Self.format(maximum)), not \(number)")
        }
        return double
    }

    /// A whole number within [minimum, maximum].
    func integer(_ key: String, minimum: Int, maximum: Int) throws -> Int? {
        guard let double = try number(key, minimum: Double(minimum), maximum: Double(maximum)) else { return nil }
        guard double == double.rounded() else { throw ConfigError("\(source): \"\(key)\" must be a whole number") }
        return Int(double)
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }
}
