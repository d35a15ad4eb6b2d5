import Foundation

/// What `check-config` and `run` warn about in a configuration that loads but will likely
/// not work: the mistakes a newcomer makes first. Pure.
public enum ConfigWarnings {
    public static func of(_ endpoints: [Endpoint]) -> [String] {
        var warnings: [String] = []
        for endpoint in endpoints {
            guard let url = URLComponents(string: endpoint.baseURL), let host = url.host?.lowercased() else { continue }
            let local = ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host) || host.hasPrefix("127.") || host.hasSuffix(".localhost")
            if url.scheme?.lowercased() == "https" && !local && endpoint.apiKey == nil {
                warnings.append("endpoint \(endpoint.name) (\(endpoint.baseURL)) is remote and has no API key: every request will be refused; "
                                + "set \(endpoint.apiKeyOrigin) (the variable api_key_env names, or the api_key_file)")
            }
            if endpoint.api == .anthropic && host == "api.openai.com" {
                warnings.append("endpoint \(endpoint.name) has \"api\": \"anthropic\" but points at api.openai.com")
            }
            if endpoint.api == .openai && host == "api.anthropic.com" {
                warnings.append("endpoint \(endpoint.name) points at api.anthropic.com but speaks openai; add \"api\": \"anthropic\"")
            }
            if endpoint.api == .openai && host == "api.openai.com" && !url.path.hasSuffix("/v1") {
                warnings.append("endpoint \(endpoint.name): base_url \(endpoint.baseURL) has no /v1; OpenAI's is https://api.openai.com/v1 "
                                + "(requests go to <base_url>/chat/completions)")
            }
        }
        return warnings
    }
}
