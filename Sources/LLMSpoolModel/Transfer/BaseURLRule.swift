/// What an endpoint's `base_url` must be for every request to it to reach somewhere:
/// checked when the config is read, so that a typo fails `check-config` and the start
/// with the setting's name, not each request later with a libcurl code. Pure.
public enum BaseURLRule {
    /// Nil when `url` will do; else what is wrong with it.
    public static func problem(_ url: String) -> String? {
        let lower = url.lowercased()
        guard let scheme = ["http://", "https://"].first(where: lower.hasPrefix) else { return "must start with http:// or https://" }
        if let bad = url.unicodeScalars.first(where: { $0.value <= 0x20 || [.control, .format].contains($0.properties.generalCategory) }) {
            return "holds a space, control or invisible character (U+\(String(bad.value, radix: 16, uppercase: true)))"
        }
        // Wherever it is: a password may hold a / or ?, which would end the host early.
        if url.contains("@") { return "holds an @ (credentials before the host?); give the key with api_key_env or api_key_file" }
        if url.contains("?") || url.contains("#") {
            return "holds a query or fragment (? or #), which the request's path (/chat/completions) would be added after; it is not supported"
        }
        let authority = self.authority(of: url.dropFirst(scheme.count))
        var host = authority[...]
        var port: Substring?
        if host.hasPrefix("[") {
            // An IPv6 literal, `[::1]:8080`.
            guard let close = host.firstIndex(of: "]") else { return "has an IPv6 host without its closing ]" }
            let after = host[host.index(after: close)...]
            host = host[...close]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return "has something after its IPv6 host that is not a port" }
                port = after.dropFirst()
            }
        } else if let colon = host.lastIndex(of: ":") {
            port = host[host.index(after: colon)...]
            host = host[..<colon]
            if host.contains(":") { return "has more than one : in its host (an IPv6 address goes in [ ])" }
        }
        guard host.count > (host.hasPrefix("[") ? 2 : 0) else { return "names no host" }
        if let port {
            guard !port.isEmpty else { return "has a : with no port after it" }
            guard port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), port.count <= 5, let number = Int(port), (1...65535).contains(number) else {
                return "has port \(port), not a number from 1 to 65535"
            }
        }
        return nil
    }

    /// The URL as an error may show it: everything before its last @, credentials perhaps
    /// (which may hold a / or ?), is not shown.
    public static func shown(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@") else { return url }
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://"), colon < at else { return "…" + String(url[at...]) }
        return String(url[..<url.index(colon, offsetBy: 3)]) + "…" + String(url[at...])
    }

    private static func authority(of rest: Substring) -> Substring {
        rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }
}
