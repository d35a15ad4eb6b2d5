/// The environment a hook runs with: an allow-list of the daemon's variables (the path,
/// home, locale and time zone) plus the task's `LLMSPOOL_*` values. Nothing else passes:
/// a deny-list let a key under any other name (`MY_LLM_TOKEN`) reach hooks and their output.
public enum HookEnvironment {
    /// Variables taken from the daemon's environment, when set.
    static let passed: Set<String> = ["PATH", "HOME", "LANG", "TZ"]
    static let fallbackPath = "/usr/local/bin:/usr/bin:/bin"

    public static func build(daemon: [String: String], task: [String: String]) -> [String: String] {
        var environment: [String: String] = [:]
        for (name, value) in daemon where passed.contains(name) || name.hasPrefix("LC_") {
            environment[name] = value
        }
        if environment["PATH"] == nil { environment["PATH"] = fallbackPath }
        for (name, value) in task where name.hasPrefix("LLMSPOOL_") {
            environment[name] = value
        }
        return environment
    }
}

/// The first bytes a hook wrote to its stdout and stderr, bounded, and how many were dropped.
public struct HookOutput: Sendable, Equatable {
    public static let limit = 4096
    public private(set) var kept: [UInt8] = []
    public private(set) var dropped = 0

    public init() {}

    public mutating func append(_ bytes: some Collection<UInt8>) {
        let room = max(0, HookOutput.limit - kept.count)
        kept += bytes.prefix(room)
        dropped += max(0, bytes.count - room)
    }

    /// For a log line: the text (escaped by the logger), with what was cut said at the end.
    public var text: String {
        let body = String(decoding: kept, as: UTF8.self)
        return dropped > 0 ? body + " [\(dropped) more bytes not logged]" : body
    }
}
