/// A request from a command to the running daemons, as a file in `state/control`
/// (`SpoolLayout.control`): what a name asks for, and when a file has served its purpose.
public enum ControlRequest: Sendable, Equatable {
    /// `retry ID` on a request waiting for its next attempt: send it now.
    case sendNow(id: String)
    /// `retry --all`: send every waiting request now.
    case sendNowAll

    /// How long a control file stays: every daemon on a shared spool looks at least once a
    /// second, so a minute is ample, and a file no daemon took does not act a day later.
    public static let lifetimeSeconds = 60.0

    /// What a file name in the control folder asks for; nil for anything else (a command's
    /// temporary, a stranger's file), which is left to age out.
    public static func parse(_ name: String) -> ControlRequest? {
        if name == SpoolLayout.sendNowAllName { return .sendNowAll }
        guard name.hasPrefix(SpoolLayout.sendNowPrefix) else { return nil }
        let id = String(name.dropFirst(SpoolLayout.sendNowPrefix.count))
        guard case .request(let parsed) = RequestName.classify(id + SpoolLayout.requestSuffix), parsed == id else { return nil }
        return .sendNow(id: id)
    }

    /// Whether a control file written at `written` (its modification time) is past use.
    public static func isExpired(written: Double, now: Double) -> Bool {
        now - written > lifetimeSeconds
    }
}
