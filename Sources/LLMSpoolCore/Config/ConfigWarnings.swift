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
                                + "set the variable api_key_env names (OPENAI_API_KEY by default) or api_key_file")
            }
            if host == "api.openai.com" && !url.path.hasSuffix("/v1") {
                warnings.append("endpoint \(endpoint.name): base_url \(endpoint.baseURL) has no /v1; OpenAI's is https://api.openai.com/v1 "
                                + "(requests go to <base_url>/chat/completions)")
            }
        }
        return warnings
    }
}
