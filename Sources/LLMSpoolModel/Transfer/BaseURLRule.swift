/// What an endpoint's `base_url` must be for every request to it to reach somewhere:
/// checked when the config is read, so that a typo fails `check-config` and the start
/// with the setting's name, not each request later with a libcurl code. Pure.
public enum BaseURLRule {
    /// Nil when `url` will do; else what is wrong with it.
    public static func problem(_ url: String) -> String? {
        let lower = url.lowercased()
        guard let scheme = ["http://", "https://"].first(where: lower.hasPrefix) else { return "must start with http:// or https://" }
        if let bad = url.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            return "holds a space or control character (U+\(String(bad.value, radix: 16, uppercase: true)))"
        }
        let authority = self.authority(of: url.dropFirst(scheme.count))
        if authority.contains("@") { return "holds credentials before the host; give the key with api_key_env or api_key_file" }
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

    /// The URL as an error may show it: credentials before the host are not shown.
    public static func shown(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return url }
        let start = url.index(colon, offsetBy: 3)
        guard let at = authority(of: url[start...]).lastIndex(of: "@") else { return url }
        return String(url[..<start]) + "…" + String(url[at...])
    }

    private static func authority(of rest: Substring) -> Substring {
        rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }
}
