/// A part of the daemon that runs on threads of its own between a start and a stop.
///
/// `start` returns once the part runs (its thread started, or its watch in place) or
/// throws why it cannot; `stop` returns once it has stopped and must be called only after
/// a start that returned. `ServiceGroup` keeps that discipline for a whole daemon.
public protocol Service: Sendable {
    /// Names the service in logs and in a start's failure.
    var name: String { get }
    func start() throws
    func stop()
}
