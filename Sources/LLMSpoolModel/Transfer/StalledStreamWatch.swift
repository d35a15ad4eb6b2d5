/// Looks after a transfer that has gone quiet, for two ways libcurl 7.88 leaves an HTTP/2
/// stream waiting with nothing more to wait for: the stream's end arrived with its last
/// data and was kept in libcurl's buffers (the stream ends only when its connection is
/// read again, which a server that has said everything never causes: `kick` runs the
/// connection's transfers), or its connection closed under it and only the stream that
/// read the close was told (`end`). Either way, without this the attempt waited for
/// `idle_timeout_seconds` and was then sent again. Pure: the time and what libcurl says
/// are passed in.
public struct StalledStreamWatch: Sendable, Equatable {
    /// Content silence after which a transfer is looked at, and how often.
    public static let lookSeconds = 1.0
    /// How long a transfer that has received bytes may have no connection before it ends.
    public static let orphanSeconds = 1.0

    public enum Step: Sendable, Equatable {
        case nothing
        /// Run the transfers of the connection's socket (`curl_multi_socket_action` on it).
        case kick
        /// The connection is gone: end the attempt as a transport failure.
        case end
    }

    private var lastLook: Double?
    private var orphanedSince: Double?

    public init() {}

    /// Whether the transfer is due a look now: it has received bytes, has been quiet for a
    /// second, and was not looked at in the last second. Asking costs libcurl calls.
    public func isDue(now: Double, quietSeconds: Double, receivedAny: Bool) -> Bool {
        guard receivedAny, quietSeconds >= Self.lookSeconds else { return false }
        guard let lastLook else { return true }
        return now - lastLook >= Self.lookSeconds
    }

    /// What to do, given whether libcurl still has a connection for the transfer and
    /// whether it is multiplexed (HTTP/2 or later).
    public mutating func look(now: Double, hasConnection: Bool, multiplexed: Bool) -> Step {
        lastLook = now
        guard hasConnection else {
            let since = orphanedSince ?? now
            orphanedSince = since
            return now - since >= Self.orphanSeconds ? .end : .nothing
        }
        orphanedSince = nil
        return multiplexed ? .kick : .nothing
    }
}
