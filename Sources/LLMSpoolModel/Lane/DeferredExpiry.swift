/// What becomes of a request whose remote batch ended before it ran (the provider's 24 h
/// window passed): `deferred_expired` in the config.
public enum DeferredExpiry: String, Sendable, CaseIterable {
    /// It is sent at once through the live lane (the expiry uses up no attempt).
    case live
    /// It fails as `expired`.
    case fail
}
