/// Services started in the order given and stopped in the reverse order of their starts,
/// so that each one stops while everything it was started after still runs.
///
/// A start that throws stops the services started before it (in reverse) and rethrows
/// its error as it was (it already says what failed, and users see it as is): a daemon
/// that cannot start leaves no thread of its own running.
public struct ServiceGroup: Sendable {
    public let services: [any Service]
    /// How many of `services` (from the first) are running.
    public private(set) var runningCount = 0
    /// The service whose start threw last, for the log.
    public private(set) var failedToStart: String?

    public init(_ services: [any Service]) {
        self.services = services
    }

    /// Starts every service in order; after a failure only the services that started
    /// are stopped. A group that runs is not started again.
    public mutating func start() throws {
        guard runningCount == 0 else { return }
        for service in services {
            do {
                try service.start()
            } catch {
                failedToStart = service.name
                stop()
                throw error
            }
            runningCount += 1
        }
    }

    /// Stops the running services, the last started first. Stopping twice stops nothing twice.
    public mutating func stop() {
        while runningCount > 0 {
            runningCount -= 1
            services[runningCount].stop()
        }
    }
}
