/// A service made of two closures: for parts whose start and stop are calls with other
/// names (`finish`, `shutdown`) or that have nothing to start (a pool started by its init).
public struct StartStopService: Service {
    public let name: String
    private let startBody: @Sendable () throws -> Void
    private let stopBody: @Sendable () -> Void

    public init(_ name: String, start: @escaping @Sendable () throws -> Void = {}, stop: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.startBody = start
        self.stopBody = stop
    }

    public func start() throws { try startBody() }
    public func stop() { stopBody() }
}
