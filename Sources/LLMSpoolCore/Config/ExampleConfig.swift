import Foundation

/// The commented example configuration `llmspool init` writes. The repository's
/// `Config/llmspool.json` is this text for the spool `./spool` (a test keeps them equal).
public enum ExampleConfig {
    public static func text(spool: String) -> String {
        // An array of one string always serializes.
        let quoted = String(decoding: (try? JSONSerialization.data(withJSONObject: [spool], options: [.withoutEscapingSlashes])) ?? Data("[\"./spool\"]".utf8), as: UTF8.self)
        return template.replacingOccurrences(of: "\"spool\": \"./spool\"", with: "\"spool\": " + String(quoted.dropFirst().dropLast()))
    }

    static let template = #"""
{
  "_about": "llmspool configuration. Every setting is optional; the values below are the defaults. Keys starting with _ are comments. See README.md, Configuration.",
  "spool": "./spool",

  "base_url": "https://api.openai.com/v1",
  "_base_url": "OPENAI_BASE_URL in the environment overrides base_url; --base-url overrides both.",
  "api_key_env": "OPENAI_API_KEY",
  "_api_key": "The key is never written here: name the environment variable that holds it (api_key_env), or a file readable by its owner only (api_key_file).",
  "_endpoints": "Instead of base_url, an ordered fallback list: [{\"name\": \"primary\", \"base_url\": \"https://api.openai.com/v1\", \"api_key_env\": \"OPENAI_API_KEY\"}, {\"name\": \"local\", \"base_url\": \"http://127.0.0.1:8080/v1\", \"model\": \"llama-3.1-8b\", \"concurrency\": 4}, {\"name\": \"anthropic\", \"api\": \"anthropic\", \"base_url\": \"https://api.anthropic.com\", \"api_key_env\": \"ANTHROPIC_API_KEY\", \"anthropic_version\": \"2023-06-01\"}]",
  "_api": "An endpoint's api is openai (the default: chat completions at <base_url>/chat/completions, Authorization: Bearer) or anthropic (Messages at <base_url>/v1/messages, x-api-key and anthropic-version); requests go only to endpoints that speak their dialect. Without an endpoints list, ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL in the environment adds an Anthropic endpoint, as the Anthropic SDKs read them.",

  "concurrency": 64,
  "requests_per_minute": 0,
  "tokens_per_minute": 0,

  "connect_timeout_seconds": 10,
  "idle_timeout_seconds": 300,
  "request_timeout_seconds": 3600,

  "max_attempts": 10,
  "retry_initial_seconds": 0.5,
  "retry_max_seconds": 60,
  "max_retry_after_seconds": 3600,
  "max_lifetime_seconds": 86400,
  "cooldown_after_failures": 3,
  "cooldown_seconds": 30,

  "max_request_bytes": 33554432,
  "max_batch_lines": 1000000,
  "max_batch_bytes": 2147483648,
  "max_response_bytes": 268435456,
  "max_event_bytes": 33554432,
  "max_json_depth": 64,
  "group_readable": false,
  "watch_mode": "auto",
  "poll_interval_seconds": 1,
  "rescan_interval_seconds": 60,
  "settle_seconds": 2,
  "min_free_bytes": 67108864,
  "shutdown_grace_seconds": 10,
  "_background_lane": "Requests whose envelope says \"completion_window\": \"24h\" (or all that name no window, with default_completion_window: \"24h\") go through the provider's Batch API (OpenAI's Files and Batches for chat, responses, completions and embeddings; Anthropic's Message Batches for Messages) on the first endpoint of the request's api with \"batch\": true, at the provider's batch price; without one they go live, or fail as no-endpoint with deferred_fallback: \"fail\".",
  "deferred_fallback": "live",
  "deferred_expired": "live",
  "batch_max_requests": 50000,
  "batch_max_bytes": 209715200,
  "batch_linger_seconds": 60,
  "batch_poll_seconds": 30,
  "batch_poll_max_seconds": 600,
  "batch_deadline_seconds": 93600,
  "_hooks": "on_complete / on_failure: an argument array run as is, e.g. [\"/usr/local/bin/notify\", \"--quiet\"], or a string run by /bin/sh -c. The environment carries LLMSPOOL_ID, LLMSPOOL_STATUS, LLMSPOOL_RESULT or LLMSPOOL_ERROR.",
  "hook_concurrency": 4,
  "hook_timeout_seconds": 60,
  "_default_model": "default_model: the model of a prompt file (outgoing/<id>.md or .txt) whose front matter names none (default none: such a file fails)",
  "_leases": "leases (default: on when polling), lease_seconds, host_id (default: the host name): for several daemons sharing one spool.",
  "lease_seconds": 30,
  "_ca_file": "ca_file: a PEM file of CA certificates for an https endpoint behind a private CA; without it, CURL_CA_BUNDLE or SSL_CERT_FILE (a file) and SSL_CERT_DIR (a folder) in the environment, else the system's.",
  "http_version": "auto",
  "_http_version": "http_version: auto (HTTP/2 over TLS when the server offers it, many requests on one connection), 1.1 or 2 (h2c over plain http); each endpoint may set its own, and its own ca_file.",
  "_metrics": "metrics: HOST:PORT to serve Prometheus /metrics and /healthz, e.g. \"127.0.0.1:9464\" (or --metrics); none by default.",
  "log_level": "info",
  "log_format": "text"
}
"""# + "\n"
}
